import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareResultSchema, snapshotListSchema, type CompareResult } from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import { errorsOf, getAndPost, send, type Params } from '../support/api-requests.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// /v1/compare across two URLs of the caller (issue 32), as a client written from the spec sees
// it: GET and POST alike, every answer checked against /v1/openapi.json. A real nats-server and
// MongoDB-wire server; agents answer with captured Lighthouse results.

const SHOP = 'https://shop.example/';
const PREVIEW = 'https://pr-12.preview.shop.example/';
const EMPTY = 'https://never-measured.example/';
const BOBS = 'https://bob.example/';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let alice: string;
let bob: string;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
/** Each project's snapshot dates, oldest first. */
const dates: Record<string, string[]> = {};

/** The same request as GET and POST (a JSON array for `location`), as alice unless told. */
const both = (params: Params, token = alice) => getAndPost(checker, gateway.url, 'compare', params, params, { token });

async function snapshotsOf(url: string): Promise<string[]> {
  const [list] = await getAndPost(checker, gateway.url, 'updates', { url }, { url }, { token: alice });
  return snapshotListSchema.parse(list.body).mobile!.map((s) => s.date);
}

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({ delayMs: 5 }),
    logger: silentLogger,
    agentId: 'london',
  });
  ({ token: alice } = await gateway.admin.createUser('alice'));
  ({ token: bob } = await gateway.admin.createUser('bob'));
  for (const url of [SHOP, PREVIEW, EMPTY])
    await gateway.admin.addProject('alice', url, { locations: ['london'], runs: 3 });
  await gateway.admin.addProject('bob', BOBS, { locations: ['london'], runs: 1 });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
  const update = async (url: string, token = alice) => {
    const reply = await send(
      gateway.url,
      'update',
      'POST',
      { body: { url, device: 'mobile' } },
      { Authorization: token },
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  };
  // Production three times, the preview twice, each a snapshot of its own (a second apart at least).
  for (const url of [SHOP, PREVIEW, SHOP, PREVIEW, SHOP]) await update(url);
  await update(BOBS, bob);
  for (const url of [SHOP, PREVIEW]) dates[url] = await snapshotsOf(url);
}, 90_000);

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

const compared = (body: unknown): CompareResult => compareResultSchema.parse(body);

describe('/v1/compare across two URLs', () => {
  it("compares a snapshot of one of the caller's projects with one of another's, and tests the runs as for one", async () => {
    expect(dates[SHOP]).toHaveLength(3);
    expect(dates[PREVIEW]).toHaveLength(2);
    const [from, to] = [dates[SHOP]![0]!, dates[PREVIEW]!.at(-1)!];
    const [reply] = await both({ url: PREVIEW, baseUrl: SHOP, from, to });
    expect(reply.status).toBe(200);
    const result = compared(reply.body);
    expect(Object.keys(result)).toEqual(['url', 'baseUrl', 'from', 'to', 'cells', 'unmatched']);
    expect(result).toMatchObject({ url: PREVIEW, baseUrl: SHOP, from, to, unmatched: [] });
    expect(result.cells.map((c) => `${c.device}/${c.location}`)).toEqual(['mobile/london']);
    // Three reliable runs a side: the U test, as /v1/compare of one project runs it.
    for (const metric of result.cells[0]!.metrics)
      expect(metric.significance).toMatchObject({ test: 'mann-whitney-u', runs: { from: 3, to: 3 } });
    // The head side is `url`'s: swapping the two swaps the sides.
    const [swapped] = await both({ url: SHOP, baseUrl: PREVIEW, from: to, to: from });
    expect(compared(swapped.body)).toMatchObject({ url: SHOP, baseUrl: PREVIEW, from: to, to: from });
    // A filter works on both sides alike.
    const [filtered] = await both({ url: PREVIEW, baseUrl: SHOP, from, to, device: 'desktop' });
    expect(compared(filtered.body)).toMatchObject({ cells: [], unmatched: [] });
  });

  it("latest on both sides: the head's newest, the base's newest", async () => {
    const [reply] = await both({ url: PREVIEW, baseUrl: SHOP, from: 'latest', to: 'latest' });
    expect(compared(reply.body)).toMatchObject({
      url: PREVIEW,
      baseUrl: SHOP,
      from: dates[SHOP]!.at(-1),
      to: dates[PREVIEW]!.at(-1),
    });
    const [mixed] = await both({ url: PREVIEW, baseUrl: SHOP, from: 'latest', to: dates[PREVIEW]![0]! });
    expect(compared(mixed.body)).toMatchObject({ from: dates[SHOP]!.at(-1), to: dates[PREVIEW]![0] });
  });

  it('on one URL, from=latest is the newest snapshot older than the `to` one, never the head itself', async () => {
    const shop = dates[SHOP]!;
    const [last] = await both({ url: SHOP, from: 'latest', to: 'latest' });
    expect(compared(last.body)).toMatchObject({ url: SHOP, from: shop[1], to: shop[2] });
    const [before] = await both({ url: SHOP, from: 'latest', to: shop[1]! });
    expect(compared(before.body)).toMatchObject({ from: shop[0], to: shop[1] });
    // The same URL given as baseUrl is one project: the same answer, without baseUrl.
    const [named] = await both({ url: SHOP, baseUrl: SHOP, from: 'latest', to: 'latest' });
    expect(named.body).toEqual(last.body);
    const [oldest] = await both({ url: SHOP, from: 'latest', to: shop[0]! });
    expect(oldest.status).toBe(404);
    expect(errorsOf(oldest)).toBe(
      `from: the project has no snapshot that is not from a pull request, older than to's (${shop[0]})`,
    );
  });

  it('without baseUrl, an answer keeps the members it had', async () => {
    const [from, to] = [dates[SHOP]![0]!, dates[SHOP]![2]!];
    const [reply] = await both({ url: SHOP, from, to });
    expect(Object.keys(compared(reply.body))).toEqual(['url', 'from', 'to', 'cells', 'unmatched']);
    expect(reply.body).toMatchObject({ url: SHOP, from, to });
  });

  it("another user's project as the base is a 404 like a project nobody has", async () => {
    const to = dates[PREVIEW]![0]!;
    const nowhere = 'https://never-added.example/';
    const [theirs] = await both({ url: PREVIEW, baseUrl: BOBS, from: 'latest', to });
    const [nobodys] = await both({ url: PREVIEW, baseUrl: nowhere, from: 'latest', to });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual(JSON.parse(JSON.stringify(nobodys.body).replaceAll(nowhere, BOBS)));
    expect(errorsOf(theirs)).toBe(`baseUrl: no project of yours has the URL ${BOBS}`);
    // Bob's own project is his to compare; alice's is not.
    const [own] = await both({ url: BOBS, from: 'latest', to: 'latest' }, bob);
    expect(own.status).toBe(404);
    expect(errorsOf(own)).toMatch(/^from: the project has no snapshot that is not from a pull request, older/);
    const [aliceBase] = await both({ url: BOBS, baseUrl: SHOP, from: 'latest', to: 'latest' }, bob);
    expect(aliceBase.status).toBe(404);
    expect(errorsOf(aliceBase)).toBe(`baseUrl: no project of yours has the URL ${SHOP}`);
  });

  it('a side without a snapshot is a 404 naming it', async () => {
    const [base] = await both({ url: PREVIEW, baseUrl: EMPTY, from: 'latest', to: 'latest' });
    expect(base.status).toBe(404);
    expect(errorsOf(base)).toBe(`from: the base project (${EMPTY}) has no snapshot that is not from a pull request`);
    const [head] = await both({ url: EMPTY, baseUrl: SHOP, from: 'latest', to: 'latest' });
    expect(errorsOf(head)).toBe('to: the project has no snapshot');
    const [dated] = await both({ url: PREVIEW, baseUrl: SHOP, from: '2001-02-03T04:05:06', to: 'latest' });
    expect(errorsOf(dated)).toBe(`from: the base project (${SHOP}) has no snapshot at 2001-02-03T04:05:06`);
    const [cell] = await both({ url: PREVIEW, baseUrl: SHOP, from: 'latest', to: 'latest', location: 'tokyo' });
    expect(errorsOf(cell)).toMatch(
      /^from: .* has no snapshot with a cell asked for .*\nto: the project has no snapshot with a cell asked for$/,
    );
  });

  it('400 for a bad baseUrl, from or to, named', async () => {
    for (const [params, pattern] of [
      [
        { url: PREVIEW, baseUrl: 'ftp://shop.example/', from: 'latest', to: 'latest' },
        /baseUrl must be an absolute http\(s\) URL/,
      ],
      [{ url: PREVIEW, baseUrl: '', from: 'latest', to: 'latest' }, /baseUrl must not be empty/],
      [{ url: PREVIEW, from: 'newest', to: 'latest' }, /from must be a UTC date-time .* or latest/],
      [{ url: PREVIEW, from: 'latest' }, /to is required/],
    ] as const) {
      const [bad] = await both(params);
      expect(bad.status, JSON.stringify(params)).toBe(400);
      expect(errorsOf(bad)).toMatch(pattern);
    }
  });

  it("from=latest skips a pull request's snapshots; each side's revision is in the answer", async () => {
    const [app, preview] = ['https://app.example/', 'https://pr-7.app.example/'];
    for (const url of [app, preview]) await gateway.admin.addProject('alice', url, { locations: ['london'], runs: 3 });
    const main = { branch: 'main', commit: 'a'.repeat(40) };
    const pr = { branch: 'feature', commit: 'b'.repeat(40), pullRequest: 7 };
    const measured = async (url: string, revision: object) => {
      const reply = await send(
        gateway.url,
        'update',
        'POST',
        { body: { url, device: 'mobile', ...revision } },
        { Authorization: alice },
      );
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    };
    // Production measured from main, then from the pull request's CI job; the preview from it.
    await measured(app, main);
    await measured(app, pr);
    await measured(preview, pr);
    const [first, fromPr] = await snapshotsOf(app);
    const [head] = await snapshotsOf(preview);
    const [across] = await both({ url: preview, baseUrl: app, from: 'latest', to: 'latest' });
    const result = compared(across.body);
    expect(Object.keys(result)).toEqual([
      'url',
      'baseUrl',
      'from',
      'to',
      'fromRevision',
      'toRevision',
      'cells',
      'unmatched',
    ]);
    expect(result).toMatchObject({ from: first, to: head, fromRevision: main, toRevision: pr });
    // On one URL too: the pull request's snapshot may be the head, never the latest base.
    const [one] = await both({ url: app, from: 'latest', to: 'latest' });
    expect(compared(one.body)).toMatchObject({ from: first, to: fromPr, fromRevision: main, toRevision: pr });
    // Dates name any snapshot, a pull request's too.
    const [dated] = await both({ url: preview, baseUrl: app, from: fromPr!, to: head! });
    expect(compared(dated.body)).toMatchObject({ from: fromPr, fromRevision: pr, toRevision: pr });
    const [none] = await both({ url: app, from: 'latest', to: first! });
    expect(errorsOf(none)).toBe(
      `from: the project has no snapshot that is not from a pull request, older than to's (${first})`,
    );
  });
});

import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  auditResultSchema,
  overviewResponseSchema,
  snapshotListSchema,
  updateStatusSchema,
  type AuditResult,
  type Revision,
} from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import { documented as documentedBy, errorsOf, getAndPost, send, type Params } from '../support/api-requests.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Snapshots know their commit (issue 32): /v1/update takes commit, branch and pullRequest, and
// /v1/audit, /v1/updates, /v1/updates/{id} and /v1/overview show them (and filter by them),
// every answer checked against /v1/openapi.json. Without them the answers keep their shape.
// Real nats-server and MongoDB-wire server; an agent answers with captured Lighthouse results.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let carol: string;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;

const SITE = 'https://rev.example/';
const DAY = new Date().toISOString().slice(0, 10);
const SHA = '9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B';

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url, replyTimeoutMs: 1_500 });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({ delayMs: 5 }),
    logger: silentLogger,
    agentId: 'london',
  });
  ({ token: carol } = await gateway.admin.createUser('carol'));
  await gateway.admin.addProject('carol', SITE, { locations: ['london'], runs: 1 });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
});

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

const both = (path: string, get: Params, post: unknown, same = false) =>
  getAndPost(checker, gateway.url, path, get, post, { token: carol, same });
const get = async (path: string, query: Params) =>
  documentedBy(checker, path, 'GET', await send(gateway.url, path, 'GET', { query }, { Authorization: carol }));

/** Every cell's revision member, or 'none' where the cell has none. */
const cellRevisions = (result: AuditResult) =>
  Object.values(result).flatMap((byLocation) =>
    Object.values(byLocation as Record<string, object>).map((cell) =>
      'revision' in cell ? (cell as { revision: Revision }).revision : 'none',
    ),
  );

const overview = (extra: Params, body: Record<string, unknown>) =>
  both(
    'overview',
    { startDate: DAY, endDate: DAY, domain: 'rev.example', ...extra },
    { dateRange: { startDate: DAY, endDate: DAY }, domain: 'rev.example', ...body },
    true,
  );

describe('an update with a revision', () => {
  let syncDate: string;

  it('sync, GET and POST: each cell shows it (commit lower-case, the pull request a number)', async () => {
    const [viaGet, viaPost] = await both(
      'update',
      { url: SITE, device: 'mobile', commit: SHA, branch: 'feature/hero', pullRequest: '12' },
      { url: SITE, device: 'mobile', commit: SHA.slice(0, 7), branch: 'main', pullRequest: 13 },
    );
    expect(viaGet.status, JSON.stringify(viaGet.body)).toBe(200);
    expect(cellRevisions(auditResultSchema.parse(viaGet.body))).toEqual([
      { commit: SHA.toLowerCase(), branch: 'feature/hero', pullRequest: 12 },
    ]);
    expect(cellRevisions(auditResultSchema.parse(viaPost.body))).toEqual([
      { commit: SHA.slice(0, 7).toLowerCase(), branch: 'main', pullRequest: 13 },
    ]);
    const list = snapshotListSchema.parse((await get('updates', { url: SITE })).body);
    syncDate = list.mobile!.find((s) => s.revision?.pullRequest === 12)!.date;
    const audit = await get('audit', { url: SITE, date: syncDate });
    expect(cellRevisions(auditResultSchema.parse(audit.body))).toEqual([
      { commit: SHA.toLowerCase(), branch: 'feature/hero', pullRequest: 12 },
    ]);
  });

  it('async: /v1/updates/{id} shows it, and so does its snapshot once done (through the queue)', async () => {
    const [viaGet, viaPost] = await both(
      'update',
      { url: SITE, device: 'desktop', mode: 'async', branch: 'release/2.0' },
      { url: SITE, device: 'desktop', mode: 'async', pullRequest: 77 },
    );
    const { id } = viaGet.body as { id: string };
    // The POST's update (pull request 77) is what the overview test filters by: done first too.
    const posted = (viaPost.body as { id: string }).id;
    await expect
      .poll(async () => updateStatusSchema.parse((await get(`updates/${posted}`, {})).body).status, {
        timeout: 15_000,
      })
      .toBe('done');
    let status = updateStatusSchema.parse((await get(`updates/${id}`, {})).body);
    expect(status.revision).toEqual({ branch: 'release/2.0' });
    await expect
      .poll(async () => (status = updateStatusSchema.parse((await get(`updates/${id}`, {})).body)).status, {
        timeout: 15_000,
      })
      .toBe('done');
    expect(status.revision).toEqual({ branch: 'release/2.0' });
    const audit = auditResultSchema.parse((await get('audit', { url: SITE, date: status.date! })).body);
    expect(cellRevisions(audit)).toEqual([{ branch: 'release/2.0' }]);
  });

  it('without one, the answers keep their shape: no revision member anywhere', async () => {
    const [viaGet] = await both('update', { url: SITE, device: 'mobile' }, { url: SITE, device: 'mobile' });
    expect(cellRevisions(auditResultSchema.parse(viaGet.body))).toEqual(['none']);
    const queued = await both(
      'update',
      { url: SITE, device: 'mobile', mode: 'async' },
      { url: SITE, device: 'mobile', mode: 'async' },
    );
    const ids = queued.map((reply) => (reply.body as { id: string }).id);
    const status = (await get(`updates/${ids[0]}`, {})).body as object;
    expect(status).not.toHaveProperty('revision');
    // Both done before the next test reads the overview twice (GET, then POST): a snapshot
    // stored in between made the two answers differ.
    for (const id of ids)
      await expect
        .poll(async () => updateStatusSchema.parse((await get(`updates/${id}`, {})).body).status, {
          timeout: 15_000,
        })
        .toBe('done');
    const list = snapshotListSchema.parse((await get('updates', { url: SITE })).body);
    expect(list.mobile!.filter((s) => !('revision' in s)).length).toBeGreaterThan(0);
  });
});

describe('/v1/overview', () => {
  it('shows the revision on the records of snapshots that had one, and filters by commit, branch and pull request', async () => {
    const all = overviewResponseSchema.parse((await overview({}, {}))[0].body);
    expect(all.some((r) => r.revision === undefined)).toBe(true);
    expect(all.filter((r) => r.revision === undefined).every((r) => !('revision' in r))).toBe(true);

    const byCommit = overviewResponseSchema.parse(
      (await overview({ commit: SHA.slice(0, 10) }, { commit: SHA }))[0].body,
    );
    expect(byCommit.length).toBeGreaterThan(0);
    expect(new Set(byCommit.map((r) => r.revision?.pullRequest))).toEqual(new Set([12]));
    // An abbreviation finds its full hash, either case.
    const short = overviewResponseSchema.parse(
      (await overview({ commit: SHA.slice(0, 7).toLowerCase() }, { commit: SHA.slice(0, 7) }))[0].body,
    );
    expect(new Set(short.map((r) => r.revision?.pullRequest))).toEqual(new Set([12, 13]));

    const byBranch = overviewResponseSchema.parse((await overview({ branch: 'main' }, { branch: 'main' }))[0].body);
    expect(byBranch.length).toBeGreaterThan(0);
    expect(byBranch.every((r) => r.revision?.branch === 'main' && r.revision.pullRequest === 13)).toBe(true);

    const byPull = overviewResponseSchema.parse((await overview({ pullRequest: '77' }, { pullRequest: 77 }))[0].body);
    expect(byPull.length).toBeGreaterThan(0);
    expect(byPull.every((r) => r.revision?.pullRequest === 77 && r.device === 'desktop')).toBe(true);

    expect((await overview({ pullRequest: '76' }, { pullRequest: 76 }))[0].body).toEqual([]);
  });
});

describe('bad values: 400 naming the parameter', () => {
  const cases: Array<[string, Params, unknown, RegExp]> = [
    ['commit', { commit: 'xyz1234' }, { commit: 'xyz1234' }, /commit must be a git commit hash/],
    ['commit', { commit: 'abc12' }, { commit: 'abc12' }, /commit must be a git commit hash/],
    ['commit', { commit: 'a'.repeat(65) }, { commit: 'a'.repeat(65) }, /commit must be a git commit hash/],
    [
      'commit',
      { commit: ['abc1234', 'abc1235'] },
      { commit: 1234567 },
      /commit (is given more than once|must be a string)/,
    ],
    ['branch', { branch: 'a..b' }, { branch: 'a..b' }, /branch must be a git branch name/],
    ['branch', { branch: 'has space' }, { branch: '-leading' }, /branch must be a git branch name/],
    ['branch', { branch: 'x.lock' }, { branch: '' }, /branch must be a git branch name/],
    ['pullRequest', { pullRequest: '0' }, { pullRequest: 0 }, /pullRequest must be a whole number/],
    ['pullRequest', { pullRequest: '-3' }, { pullRequest: 1.5 }, /pullRequest must be a whole number/],
    ['pullRequest', { pullRequest: 'abc' }, { pullRequest: '12' }, /pullRequest must be a whole number/],
    ['pullRequest', { pullRequest: '2147483648' }, { pullRequest: 2147483648 }, /pullRequest must be a whole number/],
  ];

  it.each(cases)('/v1/update: %s %j', async (_name, query, body, pattern) => {
    const [viaGet, viaPost] = await both('update', { url: SITE, ...query }, { url: SITE, ...(body as object) });
    for (const reply of [viaGet, viaPost]) {
      expect(reply.status).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
  });

  it.each(cases)('/v1/overview: %s %j', async (_name, query, body, pattern) => {
    const [viaGet, viaPost] = await both(
      'overview',
      { startDate: DAY, endDate: DAY, ...query },
      { dateRange: { startDate: DAY, endDate: DAY }, ...(body as object) },
    );
    for (const reply of [viaGet, viaPost]) {
      expect(reply.status).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
  });
});

describe('/v1/openapi.json', () => {
  it('documents the parameters and the revision members', async () => {
    const doc = JSON.stringify(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
    for (const name of ['"commit"', '"branch"', '"pullRequest"', '"Revision"']) expect(doc).toContain(name);
  });
});

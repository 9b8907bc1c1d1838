import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '@perfwatch/client';
import { siteUpdateAnswerSchema, siteUpdateStatusSchema, type SiteUpdateStatusView } from '@perfwatch/common';
import {
  documented,
  errorsOf,
  expectRateLimited,
  expectTryAgain,
  newToken,
  send,
  type Asking,
  type Params,
  type Reply,
} from '../support/api-requests.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { createSite, startSiteServices, type SiteServices } from '../support/site-fixtures.ts';
import { startTestGateway, type TestGateway } from '../support/test-services.ts';

// A site update (issue 34, items 4 and 5) on a real gateway, nats-server and MongoDB-wire server,
// an agent answering with captured Lighthouse results after a delay: its plan answered before
// anything is queued, refused whole past the caller's limit, and a run of many pages followed
// page by page through /v1/updates/{id} to done; every reply checked against /v1/openapi.json.

const SHOP = 'https://update-shop.example';
const url = (path: string) => `${SHOP}${path}`;
const SAMPLED = ['/about', '/product/1', '/product/2', '/product/3'].map(url);
const UNSAMPLED = ['/product/4', '/product/5', '/product/6'].map(url);
const LIMIT = 10;
const RUN_MS = 300;

let services: SiteServices;
let gateway: TestGateway;
let alice: string;
let bob: string;
let siteId: string;
let orgId: string;
let checker: SiteServices['checker'];
let broken = false;
const PATH = '/v1/sites/{id}/update';

type Method = 'GET' | 'POST';
async function siteUpdate(
  body: Record<string, unknown>,
  {
    method = 'POST',
    id = siteId,
    token = alice,
    headers = { Authorization: token },
    raw,
    base = gateway.url,
  }: {
    method?: Method;
    id?: string;
    token?: string;
    headers?: Record<string, string>;
    raw?: { raw: string; contentType?: string };
    base?: string;
  } = {},
): Promise<Reply> {
  const params = raw ?? (method === 'POST' ? { body } : { query: body as Params });
  const path = `sites/${id}/update`;
  return documented(checker, path, method, await send(base, path, method, params, headers), PATH);
}
async function statusOf(id: string): Promise<SiteUpdateStatusView> {
  const reply = await send(gateway.url, `updates/${id}`, 'GET', {}, { Authorization: alice });
  checker.check('/v1/updates/{id}', 'get', reply.status, reply.body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return siteUpdateStatusSchema.parse(reply.body);
}
/** Polls the site update until it ends, keeping every state read. */
async function followed(id: string): Promise<SiteUpdateStatusView[]> {
  const seen: SiteUpdateStatusView[] = [];
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(RUN_MS / 4)) {
    seen.push(await statusOf(id));
    if (seen.at(-1)!.finishedAt !== null) return seen;
  }
  throw new Error(`site update ${id} still ${seen.at(-1)?.status} after 60 s`);
}
const accepted = (reply: Reply) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return siteUpdateAnswerSchema.parse(reply.body);
};
const nothingQueued = async () => {
  expect(await gateway.store.userBacklog(orgId)).toEqual({ updates: 0, runs: 0 });
  expect((await gateway.store.listProjects(orgId)).filter((p) => p.siteId === siteId)).toEqual([]);
};

beforeAll(async () => {
  services = await startSiteServices({
    prefix: 'update',
    fails: (method) => broken && method === 'findSite',
    config: { MAX_QUEUED_RUNS_PER_USER: LIMIT },
    runner: fixtureRunner({ delayMs: RUN_MS }),
  });
  ({ gateway, checker, alice, bob } = services);
  siteId = await createSite(gateway.url, alice, { origin: SHOP, locations: ['london'], devices: ['mobile'], runs: 1 });
  orgId = (await gateway.store.listSites()).find((site) => site.id === siteId)!.userId;
  const pages = [...SAMPLED, ...UNSAMPLED].map((page) => ({
    url: page,
    group: page.includes('/product/') ? '/product/:id' : '/about',
    sampled: SAMPLED.includes(page),
  }));
  await gateway.store.replaceSitePages(siteId, pages, new Date());
}, 60_000);

afterAll(() => services?.stop());

describe('GET|POST /v1/sites/{id}/update', () => {
  it('planOnly answers pages × devices × locations × runs and the limit, and queues nothing (GET alike)', async () => {
    const plan = { pages: 4, devices: ['mobile'], locations: ['london'], runs: 1, audits: 4, queuedRuns: 0, limit: 10 };
    expect(accepted(await siteUpdate({ planOnly: true }))).toEqual({ ok: 1, id: null, plan });
    expect(accepted(await siteUpdate({ planOnly: 'true' }, { method: 'GET' }))).toEqual({ ok: 1, id: null, plan });
    const all = accepted(await siteUpdate({ planOnly: true, all: true, devices: ['mobile', 'desktop'] }));
    expect(all.plan).toMatchObject({ pages: 7, devices: ['mobile', 'desktop'], audits: 14 });
    await nothingQueued();
  });

  it('refuses a plan past the limit with 429 and its numbers, queueing nothing', async () => {
    const reply = await siteUpdate({ all: true, devices: ['mobile', 'desktop'] });
    expect(reply.status).toBe(429);
    const errors = errorsOf(reply);
    expect(errors).toMatch(/BACKLOG_FULL/);
    expect(errors).toMatch(/7 pages × 2 devices × 1 locations × 1 runs = 14 audits/);
    expect(errors).toMatch(/limit: 10 runs/);
    await nothingQueued();
  });

  it('runs the sampled pages to done, page by page in /v1/updates/{id}', async () => {
    const { id, plan } = accepted(await siteUpdate({}));
    expect(plan.audits).toBe(4);
    const seen = await followed(id!);
    // Runs go a few at a time (the fair waiting room admits 2 per user): some pages end before others.
    expect(seen.some((s) => s.status === 'running' && s.progress.done > 0 && s.progress.done < 4)).toBe(true);
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ id, kind: 'site', siteId, origin: SHOP, status: 'done', budgetFailures: 0 });
    expect(last.progress).toEqual({ pages: 4, done: 4, failed: 0 });
    expect(last.pages.map((page) => page.url).sort()).toEqual([...SAMPLED].sort());
    for (const page of last.pages) {
      expect(page).toMatchObject({ status: 'done', budgetFailures: 0, reason: null });
      expect(page.score).toBeGreaterThan(0);
      expect(page.lcp).toBeGreaterThan(0);
      // Each page's own update is an ordinary async update with its snapshot.
      const own = await send(gateway.url, `updates/${page.updateId}`, 'GET', {}, { Authorization: alice });
      expect(own.body).toMatchObject({ url: page.url, status: 'done' });
    }
  }, 90_000);

  it("measures named pages (one not sampled becomes a page of the site) and reports a page's failing budgets", async () => {
    const client = createApiClient({ server: gateway.url, token: alice });
    await client.budgets(SAMPLED[2]!, { budgets: { lcp: 1, tbt: 1 }, maxRegression: {} });
    const { id, plan } = accepted(await siteUpdate({ pages: [SAMPLED[2], UNSAMPLED[1]] }));
    expect(plan).toMatchObject({ pages: 2, audits: 2 });
    const last = (await followed(id!)).at(-1)!;
    expect(last).toMatchObject({ status: 'done', progress: { pages: 2, done: 2, failed: 0 } });
    const failing = last.pages.find((page) => page.url === SAMPLED[2])!;
    expect(failing.budgetFailures).toBe(2);
    expect(last.budgetFailures).toBe(2);
    const made = (await gateway.store.listProjects(orgId)).find((p) => p.url === UNSAMPLED[1]);
    expect(made?.siteId).toBe(siteId);
    // The client reads either kind of update.
    expect(await client.updateStatus(id!)).toMatchObject({ kind: 'site', status: 'done' });
  }, 90_000);

  it('400 for a page that is not one of the site, or pages with all; 404 for another organisation', async () => {
    const stranger = 'https://update-shop.example/nowhere';
    const bad = await siteUpdate({ pages: [SAMPLED[0], stranger] });
    expect(bad.status).toBe(400);
    expect(errorsOf(bad)).toContain(stranger);
    expect(errorsOf(await siteUpdate({ pages: [SAMPLED[0]], all: true }))).toMatch(/pages or all, not both/);
    expect((await siteUpdate({}, { token: bob })).status).toBe(404);
    expect((await siteUpdate({}, { method: 'GET', token: bob })).status).toBe(404);
    expect((await siteUpdate({}, { id: '0123456789abcdef01234567' })).status).toBe(404);
    expect((await send(gateway.url, `updates/${crypto.randomUUID()}`, 'GET', {}, { Authorization: bob })).status).toBe(
      404,
    );
  });

  it("a ci token updates a site only when every page is one of its projects; another's site update is a 404 to it", async () => {
    const narrow = await newToken(gateway.url, alice, { scope: 'ci', projects: [SAMPLED[0]!] });
    const refused = await siteUpdate({ planOnly: true }, { token: narrow });
    expect(refused.status).toBe(403);
    // Counted, never named: the sampled pages it does not list stay unknown to it.
    expect(errorsOf(refused)).toMatch(/ci token .*; 3 of the pages it would measure are not among them/);
    expect(errorsOf(refused)).not.toContain(SHOP);
    expect((await siteUpdate({ planOnly: 'true' }, { method: 'GET', token: narrow })).status).toBe(403);
    // A page of the site and a URL of none are refused alike: a 403 does not say which is a page.
    for (const guess of [UNSAMPLED[0]!, url('/no-such-page')]) {
      const named = await siteUpdate({ planOnly: true, pages: [SAMPLED[0], guess] }, { token: narrow });
      expect(named.status).toBe(403);
      expect(errorsOf(named)).toMatch(/1 of the pages it would measure is not among them/);
      expect(errorsOf(named)).not.toContain(guess);
    }
    expect(accepted(await siteUpdate({ planOnly: true, pages: [SAMPLED[0]] }, { token: narrow })).plan.pages).toBe(1);
  });

  it("a page whose update is refused (its location's queue full) is failed with the reason, never dropped", async () => {
    // A replica on the same store and queue, taking 2 updates waiting per location.
    const full = await startTestGateway({
      natsUrl: services.natsUrl,
      store: gateway.store,
      config: { MAX_PENDING_UPDATES_PER_LOCATION: 2 },
    });
    let stopped = false;
    try {
      const { token } = await full.admin.createUser('update-carol');
      const origin = 'https://full-shop.example';
      const id = await createSite(full.url, token, { origin, locations: ['london'], devices: ['mobile'], runs: 1 });
      const pages = ['/a', '/b', '/c'].map((path) => ({ url: `${origin}${path}`, group: path, sampled: true }));
      await gateway.store.replaceSitePages(id, pages, new Date());
      const started = accepted(await siteUpdate({}, { id, token, base: full.url }));
      let last = siteUpdateStatusSchema.parse(
        (await send(full.url, `updates/${started.id}`, 'GET', {}, { Authorization: token })).body,
      );
      for (const deadline = Date.now() + 60_000; last.finishedAt === null; await sleep(RUN_MS / 4)) {
        expect(Date.now()).toBeLessThan(deadline);
        const reply = await send(full.url, `updates/${started.id}`, 'GET', {}, { Authorization: token });
        last = siteUpdateStatusSchema.parse(reply.body);
      }
      expect(last).toMatchObject({ status: 'failed', progress: { pages: 3, done: 2, failed: 1 } });
      const refused = last.pages.find((page) => page.status === 'failed')!;
      expect(refused).toMatchObject({ url: `${origin}/c`, updateId: null, score: null });
      expect(refused.reason).toMatch(/^not queued: .*london/);
      // Stored, not held by the gateway that started it: once that one stops, another answers the same.
      await full.stop();
      stopped = true;
      const elsewhere = await send(gateway.url, `updates/${started.id}`, 'GET', {}, { Authorization: token });
      expect(siteUpdateStatusSchema.parse(elsewhere.body)).toEqual(last);
    } finally {
      if (!stopped) await full.stop();
    }
  }, 90_000);

  it('400 without a token, 401 with a bad one, 406 when JSON is refused; 413 and 415 for a body it will not read', async () => {
    for (const method of ['GET', 'POST'] as const) {
      expect(errorsOf(await siteUpdate({}, { method, headers: {} }))).toMatch(/Authorization/);
      expect((await siteUpdate({}, { method, token: 'pw_nope' })).status).toBe(401);
      expect((await siteUpdate({}, { method, headers: { Authorization: alice, Accept: 'text/html' } })).status).toBe(
        406,
      );
    }
    const pad = { raw: JSON.stringify({ pad: 'x'.repeat(200_000) }) };
    expect((await siteUpdate({}, { raw: pad })).status).toBe(413);
    const form = { raw: 'a=b', contentType: 'application/x-www-form-urlencoded' };
    expect((await siteUpdate({}, { raw: form })).status).toBe(415);
  });

  it('429 with Retry-After past the per-minute limit of updates', async () => {
    const id = '0123456789abcdef01234567';
    const as = (method: Method) => (at: Asking) => siteUpdate({}, { method, id, headers: at.headers, base: at.base });
    await expectRateLimited(services.limited, 'update-busy', { request: as('POST'), status: 404 }, [
      as('GET'),
      as('POST'),
    ]);
  });

  it('500 asks to try again and leaks nothing when the database fails', async () => {
    await expectTryAgain(
      (on) => (broken = on),
      [() => siteUpdate({ planOnly: 'true' }, { method: 'GET' }), () => siteUpdate({ planOnly: true })],
    );
  });

  it('every status documented for /v1/sites/{id}/update was seen to match an actual answer', () => {
    const documented = checker.documented().filter((key) => key.includes(` ${PATH} `));
    expect(documented.length).toBeGreaterThan(10);
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

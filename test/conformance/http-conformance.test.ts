import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentAnnounceSubject,
  annotationListSchema,
  credentialsViewSchema,
  auditResultSchema,
  compareResultSchema,
  projectBudgetsSchema,
  webhookListSchema,
  encodeAnnouncement,
  errorEnvelopeSchema,
  overviewResponseSchema,
  snapshotListSchema,
  type AuditResult,
} from '@perfwatch/common';
import { RunFailure, startAgent, type Agent } from '@perfwatch/agent';
import {
  createNatsDispatcher,
  createServer,
  createUpdateService,
  gatewayConfigWith,
  httpOptionsOf,
  type GatewayServer,
  type MongoStore,
} from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import {
  documented as documentedBy,
  errorsOf,
  getAndPost,
  send,
  type Params,
  type Reply,
} from '../support/api-requests.ts';
import { isolatedNats, silentLogger, startTestGateway, testStore, type TestGateway } from '../support/test-services.ts';

// The HTTP interface as a client written from the spec sees it: every endpoint in GET and POST
// form, every error status, tenancy, and every response checked against /v1/openapi.json.
// Real nats-server and MongoDB-wire server; agents answer with real captured Lighthouse results.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
const agents: Agent[] = [];
let alice: string;
let bob: string;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;

const SHOP = 'https://shop.example/';
const DAY = new Date().toISOString().slice(0, 10);

beforeAll(async () => {
  nats = await isolatedNats();
  // São Paulo has no agent: async updates of half.example offer it again for a second only.
  gateway = await startTestGateway({
    natsUrl: nats.url,
    replyTimeoutMs: 1_500,
    config: {
      UPDATE_DEADLINE_MS: 1_000,
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      // broken.example's location: its credentials may be kept.
      PERFWATCH_TRUSTED_LOCATIONS: ['los_angeles'],
    },
  });
  agentConn = await connect({ servers: nats.url });
  for (const location of ['london', 'tokyo'] as const)
    agents.push(
      startAgent({
        nc: agentConn,
        location,
        runner: fixtureRunner({ delayMs: 5 }),
        logger: silentLogger,
        agentId: location,
      }),
    );
  agents.push(
    startAgent({
      nc: agentConn,
      location: 'los_angeles',
      runner: fixtureRunner({
        fail: () => new RunFailure('PAGE_LOAD_FAILED', 'ERRORED_DOCUMENT_REQUEST: status 500', false),
      }),
      logger: silentLogger,
      agentId: 'la',
    }),
  );
  // Frankfurt has an agent that says it is there but never answers: every run there times out.
  agentConn.subscribe('perfwatch.audit.v1.frankfurt', { queue: 'perfwatch-agents.frankfurt' });
  agentConn.publish(
    agentAnnounceSubject('frankfurt'),
    encodeAnnouncement({
      agentId: 'fra-stuck',
      location: 'frankfurt',
      version: '1.0.0',
      capacity: 1,
      busy: 0,
      state: 'ready',
      intervalMs: 600_000,
    }),
  );
  await agentConn.flush();

  ({ token: alice } = await gateway.admin.createUser('alice'));
  ({ token: bob } = await gateway.admin.createUser('bob'));
  await gateway.admin.addProject('alice', SHOP, { locations: ['london', 'tokyo'], runs: 2 });
  await gateway.admin.addProject('alice', 'https://half.example/', { locations: ['tokyo', 'sao_paulo'], runs: 1 });
  await gateway.admin.addProject('alice', 'https://nobody.example/', { locations: ['sao_paulo'], runs: 1 });
  await gateway.admin.addProject('alice', 'https://broken.example/', { locations: ['los_angeles'], runs: 1 });
  await gateway.admin.addProject('alice', 'https://slow.example/', { locations: ['frankfurt'], runs: 1 });
  await gateway.admin.addProject('bob', 'https://bob.example/', { locations: ['london'], runs: 1 });

  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
});

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

const documented = (path: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', reply: Reply) =>
  documentedBy(checker, path, method, reply);

/** A POST of `body` as alice (or `token`), documented. */
const post = async (path: string, body: unknown, token = alice) =>
  documented(path, 'POST', await send(gateway.url, path, 'POST', { body }, { Authorization: token }));

/** A GET carrying a parameter that changes something: 405 with `Allow: POST`, and nothing changed. */
async function refusedByGet(path: string, query: Params): Promise<void> {
  const reply = documented(path, 'GET', await send(gateway.url, path, 'GET', { query }, { Authorization: alice }));
  expect(reply.status, JSON.stringify(query)).toBe(405);
  expect(reply.headers.get('allow')).toBe('POST');
  expect(errorsOf(reply)).toMatch(/POST only/);
}

/** The same request as GET (query) and POST (body); both must answer alike. */
const both = (
  path: string,
  get: Params,
  post: unknown,
  {
    token = alice,
    headers = {},
    base = gateway.url,
    same = true,
  }: { token?: string | null; headers?: Record<string, string>; base?: string; same?: boolean } = {},
) => getAndPost(checker, base, path, get, post, { token, headers, same });

/** Device → location → median, the shape of an update without its dates. */
function shape(result: AuditResult) {
  return Object.fromEntries(
    Object.entries(result).map(([device, byLocation]) => [
      device,
      Object.fromEntries(
        Object.entries(byLocation ?? {}).map(([location, cell]) => [
          location,
          { runs: cell!.runs.length, locations: cell!.locations },
        ]),
      ),
    ]),
  );
}

describe('/v1/update', () => {
  it('sync: the audit result of the requested devices, GET and POST alike', async () => {
    const [get, post] = await both(
      'update',
      { url: SHOP, device: 'mobile' },
      { url: SHOP, device: 'mobile' },
      { same: false },
    );
    expect(get.status).toBe(200);
    const a = auditResultSchema.parse(get.body);
    expect(shape(a)).toEqual(shape(auditResultSchema.parse(post.body)));
    expect(shape(a)).toEqual({
      mobile: {
        london: { runs: 2, locations: ['london', 'tokyo'] },
        tokyo: { runs: 2, locations: ['london', 'tokyo'] },
      },
    });
    const all = await both('update', { url: SHOP }, { url: SHOP }, { same: false });
    expect(Object.keys(all[0].body as object).sort()).toEqual(['desktop', 'mobile']);
  });

  it('async: {ok: 1, id} at once, and the update lands', async () => {
    const before = (await both('updates', { url: 'https://half.example/' }, { url: 'https://half.example/' }))[0]
      .body as { mobile?: unknown[] };
    const [get, post] = await both(
      'update',
      { url: 'https://half.example/', mode: 'async', device: 'mobile' },
      { url: 'https://half.example/', mode: 'async', device: 'mobile' },
      { same: false },
    );
    for (const reply of [get, post]) expect(reply.body).toMatchObject({ ok: 1, id: expect.any(String) });
    await expect
      .poll(
        async () =>
          (
            (await both('updates', { url: 'https://half.example/' }, { url: 'https://half.example/' }))[0].body as {
              mobile?: unknown[];
            }
          ).mobile?.length ?? 0,
        { timeout: 10_000 },
      )
      .toBeGreaterThanOrEqual((before.mobile?.length ?? 0) + 2);
  });

  it('a partial result when some locations have no agent', async () => {
    const [get] = await both(
      'update',
      { url: 'https://half.example/', device: 'desktop' },
      { url: 'https://half.example/', device: 'desktop' },
      { same: false },
    );
    expect(get.status).toBe(200);
    expect(Object.keys((get.body as AuditResult).desktop!)).toEqual(['tokyo']);
  });

  it.each([
    ['https://nobody.example/', 503, 'SERVICE_UNAVAILABLE'],
    ['https://slow.example/', 504, 'GATEWAY_TIMEOUT'],
    ['https://broken.example/', 502, 'BAD_GATEWAY'],
  ] as const)('%s → %i %s', async (url, status, name) => {
    const [get] = await both('update', { url, device: 'mobile' }, { url, device: 'mobile' }, { same: false });
    expect(get.status).toBe(status);
    expect(errorEnvelopeSchema.parse(get.body).status).toBe(name);
  });

  it('400 for each bad parameter, named in errors', async () => {
    const cases: Array<[Params, unknown, RegExp]> = [
      [{}, {}, /url is required/],
      [{ url: 'ftp://x.example/' }, { url: 'ftp://x.example/' }, /absolute http\(s\) URL/],
      [{ url: SHOP, device: 'tablet' }, { url: SHOP, device: 'tablet' }, /device must be one of mobile, desktop/],
      [{ url: SHOP, mode: 'later' }, { url: SHOP, mode: 'later' }, /mode must be sync or async/],
      [
        { url: SHOP, updateType: 'scheduled' },
        { url: SHOP, updateType: 'scheduled' },
        /updateType must be manual or ci/,
      ],
      [{ url: SHOP, devices: 'mobile' }, { url: SHOP, devices: 'mobile' }, /unknown parameter\(s\): devices/],
    ];
    for (const [get, post, pattern] of cases) {
      const [reply] = await both('update', get, post);
      expect(reply.status, JSON.stringify(get)).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
    const twice = documented(
      'update',
      'GET',
      await send(gateway.url, 'update', 'GET', { query: { url: [SHOP, SHOP] } }, { Authorization: alice }),
    );
    expect(errorsOf(twice)).toMatch(/url is given more than once/);
    const notString = documented(
      'update',
      'POST',
      await send(gateway.url, 'update', 'POST', { body: { url: 42 } }, { Authorization: alice }),
    );
    expect(errorsOf(notString)).toMatch(/url must be a string/);
    for (const raw of ['{"url": ', '[1,2]', '"just a string"']) {
      const reply = documented(
        'update',
        'POST',
        await send(gateway.url, 'update', 'POST', { raw }, { Authorization: alice }),
      );
      expect(reply.status, raw).toBe(400);
    }
  });
});

describe('/v1/audit and /v1/updates', () => {
  let dates: string[];

  beforeAll(async () => {
    await both('update', { url: SHOP }, { url: SHOP }, { same: false });
    const [list] = await both('updates', { url: SHOP }, { url: SHOP });
    const parsed = snapshotListSchema.parse(list.body);
    dates = parsed.mobile!.map((s) => s.date);
  });

  it("/v1/updates lists each device's snapshot dates, ascending, with their locations", async () => {
    expect(dates.length).toBeGreaterThanOrEqual(3);
    expect([...dates].sort()).toEqual(dates);
    const [list] = await both('updates', { url: SHOP }, { url: SHOP });
    for (const entry of snapshotListSchema.parse(list.body).mobile!)
      expect(entry.locations.sort()).toEqual(['london', 'tokyo']);
  });

  it('/v1/updates pages: the newest `limit` before `before`, ascending, with `next` while older ones remain', async () => {
    expect(dates.length).toBeGreaterThanOrEqual(3);
    const [newest] = await both('updates', { url: SHOP, limit: '2' }, { url: SHOP, limit: 2 });
    const first = snapshotListSchema.parse(newest.body);
    expect(first.mobile!.map((s) => s.date)).toEqual(dates.slice(-2));
    expect(first.next).toBe(dates.at(-2));
    // Walking back page by page gives every date once, the oldest page without `next`.
    const walked: string[] = [...first.mobile!.map((s) => s.date)];
    let next = first.next;
    while (next) {
      const [page] = await both(
        'updates',
        { url: SHOP, limit: '2', before: next },
        { url: SHOP, limit: 2, before: next },
      );
      const parsed = snapshotListSchema.parse(page.body);
      walked.unshift(...parsed.mobile!.map((s) => s.date));
      next = parsed.next;
    }
    expect(walked).toEqual(dates);
    expect(
      snapshotListSchema.parse((await both('updates', { url: SHOP }, { url: SHOP }))[0].body).next,
    ).toBeUndefined();
    for (const bad of [{ limit: '0' }, { limit: '1001' }, { before: 'yesterday' }]) {
      const [refused] = await both('updates', { url: SHOP, ...bad }, { url: SHOP, ...bad });
      expect(refused.status, JSON.stringify(bad)).toBe(400);
    }
  });

  it('reads a snapshot by its date, with a Z or milliseconds too, filtered by device and locations', async () => {
    const date = dates.at(-1)!;
    const [plain] = await both('audit', { url: SHOP, date }, { url: SHOP, date });
    expect(plain.status).toBe(200);
    const full = auditResultSchema.parse(plain.body);
    expect(full.mobile!.london!.lighthouse.date).toBe(date);
    for (const form of [`${date}Z`, `${date}.000Z`, `${date}.123`]) {
      const [reply] = await both('audit', { url: SHOP, date: form }, { url: SHOP, date: form });
      expect(reply.body).toEqual(plain.body);
    }
    const [filtered] = await both(
      'audit',
      { url: SHOP, date, device: 'desktop', location: ['tokyo'] },
      { url: SHOP, date, device: 'desktop', location: ['tokyo'] },
    );
    expect(filtered.body).toEqual({ desktop: { tokyo: full.desktop!.tokyo } });
    const [one] = await both('audit', { url: SHOP, date, location: 'london' }, { url: SHOP, date, location: 'london' });
    expect(Object.keys((one.body as AuditResult).mobile!)).toEqual(['london']);
  });

  it('/v1/compare: two snapshots side by side, cell by cell, GET and POST alike', async () => {
    const [from, to] = [dates[0]!, dates.at(-1)!];
    // The oldest snapshot is of mobile only: its desktop cells are the later one's alone.
    const [all] = await both('compare', { url: SHOP, from, to }, { url: SHOP, from, to });
    expect(compareResultSchema.parse(all.body).unmatched).toEqual([
      { device: 'desktop', location: 'london', onlyIn: 'to' },
      { device: 'desktop', location: 'tokyo', onlyIn: 'to' },
    ]);
    const [reply] = await both(
      'compare',
      { url: SHOP, from, to, device: 'mobile' },
      { url: SHOP, from, to, device: 'mobile' },
    );
    expect(reply.status).toBe(200);
    const result = compareResultSchema.parse(reply.body);
    expect(result).toMatchObject({ url: SHOP, from, to, unmatched: [] });
    expect(result.cells.map((c) => `${c.device}/${c.location}`).sort()).toEqual(['mobile/london', 'mobile/tokyo']);
    // Each side's median run, as /v1/audit has it; two runs a side are too few for the U test.
    const [a, b] = await Promise.all(
      [from, to].map(async (date) =>
        auditResultSchema.parse((await both('audit', { url: SHOP, date }, { url: SHOP, date }))[0].body),
      ),
    );
    const lcp = result.cells
      .find((c) => c.device === 'mobile' && c.location === 'tokyo')!
      .metrics.find((m) => m.metric === 'lcp')!;
    const median = (r: AuditResult) => r.mobile!.tokyo!.runs[r.mobile!.tokyo!.median - 1]!;
    expect(lcp).toMatchObject({
      from: median(a!).lcp,
      to: median(b!).lcp,
      significance: { test: 'not enough runs', runs: { from: 2, to: 2 } },
    });
    const [filtered] = await both(
      'compare',
      { url: SHOP, from, to, device: 'mobile', location: 'london' },
      { url: SHOP, from, to, device: 'mobile', location: ['london'] },
    );
    expect(compareResultSchema.parse(filtered.body).cells.map((c) => `${c.device}/${c.location}`)).toEqual([
      'mobile/london',
    ]);
    // Absent dates are named; bad ones refused.
    const [absent] = await both(
      'compare',
      { url: SHOP, from, to: '2001-02-03T04:05:06' },
      { url: SHOP, from, to: '2001-02-03T04:05:06' },
    );
    expect(absent.status).toBe(404);
    expect(errorsOf(absent)).toMatch(/to: the project has no snapshot at 2001-02-03T04:05:06/);
    for (const [params, pattern] of [
      [{ url: SHOP, from }, /to is required/],
      [{ url: SHOP, from, to: 'now' }, /to must be a UTC date-time/],
    ] as const) {
      const [bad] = await both('compare', params, params);
      expect(bad.status).toBe(400);
      expect(errorsOf(bad)).toMatch(pattern);
    }
  });

  it('404 when there is no snapshot at that second', async () => {
    const [reply] = await both(
      'audit',
      { url: SHOP, date: '2001-02-03T04:05:06' },
      { url: SHOP, date: '2001-02-03T04:05:06' },
    );
    expect(reply.status).toBe(404);
  });

  it('400 for a missing, malformed or impossible date, unknown device or location', async () => {
    const cases: Array<[Params, RegExp]> = [
      [{ url: SHOP }, /date is required/],
      [{ url: SHOP, date: '2026-02-30T00:00:00' }, /date must be a UTC date-time/],
      [{ url: SHOP, date: '22/11/2026' }, /date must be a UTC date-time/],
      [{ url: SHOP, date: dates[0]!, device: 'watch' }, /device must be one of/],
      [{ url: SHOP, date: dates[0]!, location: ['london', 'mars'] }, /location/],
    ];
    for (const [params, pattern] of cases) {
      const [reply] = await both('audit', params, params);
      expect(reply.status, JSON.stringify(params)).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
    const [all] = await both(
      'audit',
      { url: 'nope', date: 'nope', device: 'nope', location: 'nope' },
      { url: 'nope', date: 'nope', device: 'nope', location: ['nope'] },
    );
    expect(errorEnvelopeSchema.parse(all.body).errors).toHaveLength(4);
  });
});

describe('/v1/overview', () => {
  const range = (extra: Params = {}) =>
    [
      { startDate: DAY, endDate: DAY, ...extra },
      {
        dateRange: { startDate: DAY, endDate: DAY },
        ...Object.fromEntries(
          Object.entries(extra).map(([k, v]) => [k === 'section' ? 'sections' : k, k === 'section' ? [v].flat() : v]),
        ),
      },
    ] as const;

  it("KPI records of the caller's snapshots in range, in the documented order", async () => {
    await both(
      'update',
      { url: SHOP, updateType: 'ci', device: 'desktop' },
      { url: SHOP, updateType: 'ci', device: 'desktop' },
      { same: false },
    );
    const [reply] = await both('overview', ...range());
    const records = overviewResponseSchema.parse(reply.body);
    expect(records.length).toBeGreaterThan(0);
    const keys = records.map((r) => [r.date, r.url, r.device, r.location, r.section, r.kpi].join('|'));
    expect(keys).toEqual([...keys].sort());
    expect(new Set(records.map((r) => r.updateType))).toEqual(new Set(['Manual', 'Ci']));
    expect(new Set(records.map((r) => r.section))).toEqual(new Set(['LIGHTHOUSE', 'PAGE_SOURCE', 'SAVINGS']));
    const perf = records.find((r) => r.kpi === 'performance')!;
    // The seed's fields, as they were, and the lab Core Web Vitals beside them (KPI version 2).
    expect(Object.keys(perf.data as object).sort()).toEqual([
      'cls',
      'fCPUi',
      'fcp',
      'fmp',
      'inp',
      'lcp',
      'mpFID',
      'score',
      'si',
      'tbt',
      'ttfb',
      'tti',
    ]);
    const data = perf.data as Record<string, number | null>;
    for (const seed of ['si', 'fcp', 'tti', 'mpFID', 'score']) expect(typeof data[seed], seed).toBe('number');
    expect([data['fmp'], data['fCPUi'], data['inp']]).toEqual([null, null, null]);
    for (const lab of ['lcp', 'tbt', 'cls', 'ttfb']) expect(typeof data[lab], lab).toBe('number');
    expect(records.every((r) => ['shop.example', 'half.example'].includes(r.domain))).toBe(true);
  });

  it('filters by domain, updateType and sections (section or sections in GET)', async () => {
    const [ci] = await both('overview', ...range({ updateType: 'ci', domain: 'shop.example' }));
    const ciRecords = overviewResponseSchema.parse(ci.body);
    expect(ciRecords.length).toBeGreaterThan(0);
    expect(ciRecords.every((r) => r.updateType === 'Ci' && r.domain === 'shop.example' && r.device === 'desktop')).toBe(
      true,
    );
    const [half] = await both('overview', ...range({ domain: 'half.example' }));
    expect(overviewResponseSchema.parse(half.body).every((r) => r.url === 'https://half.example/')).toBe(true);
    const [crux] = await both('overview', ...range({ section: ['crux', 'security'] }));
    expect(crux.body).toEqual([]);
    const viaSections = documented(
      'overview',
      'GET',
      await send(
        gateway.url,
        'overview',
        'GET',
        { query: { startDate: DAY, endDate: DAY, sections: 'lighthouse' } },
        { Authorization: alice },
      ),
    );
    expect((viaSections.body as unknown[]).length).toBeGreaterThan(0);
  });

  it('400 for bad dates, a reversed or too long range, unknown sections', async () => {
    const cases: Array<[Params, unknown, RegExp]> = [
      [{ endDate: DAY }, { dateRange: { endDate: DAY } }, /startDate is required/],
      [
        { startDate: '2026-02-30', endDate: DAY },
        { dateRange: { startDate: '2026-02-30', endDate: DAY } },
        /startDate must be a UTC date yyyy-MM-dd/,
      ],
      [
        { startDate: '2026-05-02', endDate: '2026-05-01' },
        { dateRange: { startDate: '2026-05-02', endDate: '2026-05-01' } },
        /endDate is before startDate/,
      ],
      [
        { startDate: '2024-01-01', endDate: '2026-01-01' },
        { dateRange: { startDate: '2024-01-01', endDate: '2026-01-01' } },
        /longer than 400 days/,
      ],
      [
        { startDate: DAY, endDate: DAY, section: 'speed' },
        { dateRange: { startDate: DAY, endDate: DAY }, sections: ['speed'] },
        /sections/,
      ],
      [
        { startDate: DAY, endDate: DAY, updateType: 'hourly' },
        { dateRange: { startDate: DAY, endDate: DAY }, updateType: 'hourly' },
        /updateType must be one of manual, scheduled, ci/,
      ],
    ];
    for (const [get, post, pattern] of cases) {
      const [reply] = await both('overview', get, post, { same: false });
      expect(reply.status, JSON.stringify(get)).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
    const flat = documented(
      'overview',
      'POST',
      await send(gateway.url, 'overview', 'POST', { body: { startDate: DAY, endDate: DAY } }, { Authorization: alice }),
    );
    expect(errorsOf(flat)).toMatch(/dateRange/);
  });
});

describe('/v1/updates/{id}', () => {
  it('follows an async update from queued to done, with the snapshot date /v1/audit takes', async () => {
    const [get] = await both(
      'update',
      { url: 'https://half.example/', mode: 'async', device: 'mobile' },
      { url: 'https://half.example/', mode: 'async', device: 'mobile' },
      { same: false },
    );
    const id = (get.body as { id: string }).id;
    // Read while it runs: GET and POST may see different progress.
    const [first] = await both(`updates/${id}`, {}, {}, { same: false });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      id,
      url: 'https://half.example/',
      updateType: 'manual',
      devices: ['mobile'],
      locations: ['tokyo', 'sao_paulo'],
    });
    expect(['queued', 'running', 'done']).toContain((first.body as { status: string }).status);
    await expect
      .poll(async () => ((await both(`updates/${id}`, {}, {}, { same: false }))[0].body as { status: string }).status, {
        timeout: 10_000,
      })
      .toBe('done');
    const [done] = await both(`updates/${id}`, {}, {});
    expect((done.body as { progress: unknown }).progress).toEqual([
      { device: 'mobile', location: 'tokyo', done: 1, total: 1 },
      { device: 'mobile', location: 'sao_paulo', done: 1, total: 1 },
    ]);
    expect((done.body as { missing: unknown }).missing).toEqual([
      { device: 'mobile', location: 'sao_paulo', reason: expect.stringMatching(/^NO_RESPONDERS: /) },
    ]);
    const date = (done.body as { date: string }).date;
    const [snapshot] = await both(
      'audit',
      { url: 'https://half.example/', date },
      { url: 'https://half.example/', date },
    );
    expect(snapshot.status).toBe(200);
  });

  it('records a failed update with its reason', async () => {
    const [get] = await both(
      'update',
      { url: 'https://broken.example/', mode: 'async', device: 'mobile' },
      { url: 'https://broken.example/', mode: 'async', device: 'mobile' },
      { same: false },
    );
    const id = (get.body as { id: string }).id;
    await expect
      .poll(async () => ((await both(`updates/${id}`, {}, {}, { same: false }))[0].body as { status: string }).status, {
        timeout: 10_000,
      })
      .toBe('failed');
    const [failed] = await both(`updates/${id}`, {}, {});
    expect((failed.body as { reason: string }).reason).toMatch(/ERRORED_DOCUMENT_REQUEST/);
    expect((failed.body as { date: string | null }).date).toBeNull();
  });

  it("404 for an unknown id and for another user's update alike; 400 for a malformed id or an unknown parameter", async () => {
    const [get, post] = await both(
      'update',
      { url: SHOP, mode: 'async', device: 'desktop' },
      { url: SHOP, mode: 'async', device: 'desktop' },
      { same: false },
    );
    const id = (get.body as { id: string }).id;
    const [theirs] = await both(`updates/${id}`, {}, {}, { token: bob });
    const unknown = randomUUID();
    const [nobodys] = await both(`updates/${unknown}`, {}, {}, { token: bob });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual(JSON.parse(JSON.stringify(nobodys.body).replaceAll(unknown, id)));
    const [malformed] = await both('updates/not-an-id', {}, {});
    expect(malformed.status).toBe(400);
    expect((malformed.body as { errors: string[] }).errors.join(' ')).toMatch(/id must be an update id/);
    const [extra] = await both(`updates/${id}`, { url: SHOP }, { url: SHOP });
    expect(extra.status).toBe(400);
    expect((extra.body as { errors: string[] }).errors.join(' ')).toMatch(/unknown parameter\(s\): url/);
    // Let both updates finish here: stored later, one would show up between the GET and the POST of the next test's comparison.
    for (const queued of [id, (post.body as { id: string }).id]) {
      await expect
        .poll(
          async () => ((await both(`updates/${queued}`, {}, {}, { same: false }))[0].body as { status: string }).status,
          { timeout: 10_000 },
        )
        .toBe('done');
    }
  });
});

describe('/v1/budgets, /v1/webhooks and /v1/annotations', () => {
  it("/v1/budgets reads a project's budgets by GET or POST and replaces them by POST only; the next snapshot carries its checks", async () => {
    const [none] = await both('budgets', { url: SHOP }, { url: SHOP });
    expect(projectBudgetsSchema.parse(none.body)).toEqual({ url: SHOP, budgets: {}, maxRegression: {} });
    await refusedByGet('budgets', { url: SHOP, budget: ['performance=10', 'lcp=999999'], maxRegression: 'seo=100' });
    await refusedByGet('budgets', { url: SHOP, maxRegression: 'seo=100' });
    expect((await both('budgets', { url: SHOP }, { url: SHOP }))[0].body).toEqual(none.body);
    const set = await post('budgets', {
      url: SHOP,
      budgets: { performance: 10, lcp: 999_999 },
      maxRegression: { seo: 100 },
    });
    expect(set.body).toEqual({ url: SHOP, budgets: { performance: 10, lcp: 999_999 }, maxRegression: { seo: 100 } });
    expect((await both('budgets', { url: SHOP }, { url: SHOP }))[0].body).toEqual(set.body);

    const [update] = await both(
      'update',
      { url: SHOP, device: 'mobile' },
      { url: SHOP, device: 'mobile' },
      { same: false },
    );
    const checks = auditResultSchema.parse(update.body).mobile!.london!.checks!;
    expect(checks.filter((c) => c.kind === 'budget').map((c) => [c.key, c.pass, c.state])).toEqual([
      ['performance', true, 'passing'],
      ['lcp', true, 'passing'],
    ]);
    const date = auditResultSchema.parse(update.body).mobile!.london!.lighthouse.date;
    const [audit] = await both(
      'audit',
      { url: SHOP, date, device: 'mobile', location: 'london' },
      { url: SHOP, date, device: 'mobile', location: ['london'] },
    );
    expect(auditResultSchema.parse(audit.body).mobile!.london!.checks).toEqual(checks);

    // Empty objects: no budgets at all.
    const cleared = await post('budgets', { url: SHOP, budgets: {}, maxRegression: {} });
    expect(cleared.body).toEqual({ url: SHOP, budgets: {}, maxRegression: {} });
    const cases: Array<[unknown, RegExp]> = [
      [{ url: SHOP, budgets: { speed: 1 } }, /unknown budget key "speed"/],
      [{ url: SHOP, budgets: { performance: 101 } }, /score from 0 to 100/],
      [{ url: SHOP, budgets: { lcp: 'fast' } }, /a number/],
      [{ budgets: { lcp: 1 } }, /url is required/],
    ];
    for (const [body, pattern] of cases) {
      const reply = await post('budgets', body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
  });

  it('/v1/webhooks adds one by POST (its secret shown once), lists it with its deliveries, removes it; refuses private targets and unknown ids', async () => {
    await refusedByGet('webhooks', { targetUrl: 'http://127.0.0.1:9/by-a-crawler' });
    const added = await post('webhooks', { targetUrl: 'http://127.0.0.1:9/hook', project: SHOP, format: 'slack' });
    const addedToo = await post('webhooks', { targetUrl: 'http://127.0.0.1:9/other' });
    const created = webhookListSchema.parse(added.body).created!;
    expect(created).toMatchObject({
      targetUrl: 'http://127.0.0.1:9/hook',
      project: SHOP,
      format: 'slack',
      deliveries: [],
    });
    expect(created.secret).toMatch(/^pwhs_[A-Za-z0-9_-]{43}$/);
    expect(webhookListSchema.parse(addedToo.body).created).toMatchObject({ project: null, format: 'json' });
    expect(added.headers.get('cache-control')).toBe('no-store');
    const [listed] = await both('webhooks', {}, {});
    const hooks = webhookListSchema.parse(listed.body).webhooks;
    expect(hooks.map((h) => h.targetUrl)).toEqual(['http://127.0.0.1:9/hook', 'http://127.0.0.1:9/other']);
    // The secret is never listed.
    expect(JSON.stringify(listed.body)).not.toContain('pwhs_');
    // Another user sees none of them and cannot remove them.
    expect(webhookListSchema.parse((await both('webhooks', {}, {}, { token: bob }))[0].body).webhooks).toEqual([]);
    const notYours = await post('webhooks', { remove: created.id }, bob);
    expect(notYours.status).toBe(404);
    await refusedByGet('webhooks', { remove: created.id });
    const removed = await post('webhooks', { remove: created.id });
    expect(webhookListSchema.parse(removed.body)).toMatchObject({
      removed: created.id,
      webhooks: [{ id: hooks[1]!.id }],
    });
    await post('webhooks', { remove: hooks[1]!.id });
    expect(webhookListSchema.parse((await both('webhooks', {}, {}))[0].body).webhooks).toEqual([]);

    const cases: Array<[Params, RegExp]> = [
      [{ targetUrl: 'http://10.1.2.3/hook' }, /not a public address/],
      [{ targetUrl: 'ftp://files.example/' }, /http\(s\) URL/],
      [{ targetUrl: 'http://user:pw@127.0.0.1/' }, /credentials/],
      [{ targetUrl: 'http://127.0.0.1:9/', format: 'xml' }, /format must be json or slack/],
      [{ format: 'slack' }, /go with targetUrl/],
      [{ remove: 'nope' }, /remove must be a webhook id/],
      [{ remove: 'a'.repeat(24), targetUrl: 'http://127.0.0.1:9/' }, /remove takes no other parameter/],
    ];
    for (const [params, pattern] of cases) {
      const reply = await post('webhooks', params);
      expect(reply.status, JSON.stringify(params)).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
  });

  it('/v1/annotations adds deploy markers by POST and lists them by date, in a range', async () => {
    const url = 'https://half.example/';
    await refusedByGet('annotations', { url, text: 'by a crawler' });
    const first = await post('annotations', {
      url,
      text: 'release 1.2',
      date: '2026-03-01T10:00:00',
      link: 'https://git.example/releases/1.2',
    });
    const second = await post('annotations', { url, text: 'release 1.1', date: '2026-02-01T10:00:00' });
    expect(annotationListSchema.parse(first.body).added).toMatchObject({
      url,
      date: '2026-03-01T10:00:00',
      text: 'release 1.2',
      link: 'https://git.example/releases/1.2',
    });
    expect(annotationListSchema.parse(second.body).annotations.map((a) => a.text)).toEqual([
      'release 1.1',
      'release 1.2',
    ]);
    const [ranged] = await both(
      'annotations',
      { url, from: '2026-02-15T00:00:00', to: '2026-12-31T00:00:00' },
      { url, from: '2026-02-15T00:00:00', to: '2026-12-31T00:00:00' },
    );
    expect(annotationListSchema.parse(ranged.body).annotations.map((a) => a.text)).toEqual(['release 1.2']);
    // Without a date: now.
    const now = await post('annotations', { url, text: 'hotfix' });
    expect(Math.abs(Date.parse(`${annotationListSchema.parse(now.body).added!.date}Z`) - Date.now())).toBeLessThan(
      60_000,
    );
    const cases: Array<[Params, RegExp]> = [
      [{ url, text: '' }, /text must not be empty/],
      [{ url, text: 'x'.repeat(501) }, /longer than 500/],
      [{ url, text: 'x', link: 'javascript:alert(1)' }, /link must be an absolute http\(s\) URL/],
      [{ url, date: '2026-01-01T00:00:00' }, /date and link go with text/],
      [{ url, text: 'x', date: 'soon' }, /date must be a UTC date-time/],
      [{ text: 'x' }, /url is required/],
    ];
    for (const [params, pattern] of cases) {
      const reply = await post('annotations', params);
      expect(reply.status, JSON.stringify(params)).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
    expect(
      annotationListSchema.parse((await both('annotations', { url }, { url }))[0].body).annotations.map((a) => a.text),
    ).not.toContain('by a crawler');

    // Pages of the newest `limit`, going back by `next`; a removal by POST.
    const [page] = await both('annotations', { url, limit: '2' }, { url, limit: 2 });
    const newest = annotationListSchema.parse(page.body);
    expect(newest.annotations.map((a) => a.text)).toEqual(['release 1.2', 'hotfix']);
    const [older] = await both(
      'annotations',
      { url, limit: '2', to: newest.next! },
      { url, limit: 2, to: newest.next },
    );
    expect(annotationListSchema.parse(older.body)).toMatchObject({ annotations: [{ text: 'release 1.1' }] });
    expect(annotationListSchema.parse(older.body).next).toBeUndefined();
    const oldest = annotationListSchema.parse(second.body).annotations[0]!;
    await refusedByGet('annotations', { url, remove: oldest.id });
    const removed = annotationListSchema.parse((await post('annotations', { url, remove: oldest.id })).body);
    expect(removed.removed).toBe(oldest.id);
    expect(removed.annotations.map((a) => a.id)).not.toContain(oldest.id);
    expect((await post('annotations', { url, remove: oldest.id })).status).toBe(404);

    // As many as a project may have: the next add is refused, nothing stored.
    const project = (await gateway.store.findProject((await gateway.store.findUserByName('alice'))!.id, url))!;
    for (let n = await gateway.store.countAnnotations(project.id); n < 1_000; n++)
      await gateway.store.addAnnotation({
        projectId: project.id,
        date: new Date(Date.UTC(2020, 0, 1, 0, 0, n)),
        text: 'old',
        link: null,
      });
    const full = await post('annotations', { url, text: 'one too many' });
    expect(full.status).toBe(400);
    expect(errorsOf(full)).toMatch(/at most 1000 annotations per project/);
    expect(await gateway.store.countAnnotations(project.id)).toBe(1_000);
  });
});

describe('/v1/credentials', () => {
  it('sets credentials by POST only, shows their names and never a value, clears them; 503 without a key', async () => {
    const url = 'https://broken.example/';
    const secret = 'session-value-do-not-show';
    const [none] = await both('credentials', { url }, { url });
    expect(credentialsViewSchema.parse(none.body)).toEqual({
      url,
      configured: false,
      cookies: [],
      headers: [],
      loginSteps: 0,
    });
    const set = documented(
      'credentials',
      'POST',
      await send(
        gateway.url,
        'credentials',
        'POST',
        {
          body: {
            url,
            auth: {
              cookies: [{ name: 'session', value: secret }],
              headers: { Authorization: `Bearer ${secret}` },
              login: [{ action: 'waitFor', selector: '#account' }],
            },
          },
        },
        { Authorization: alice },
      ),
    );
    expect(set.status).toBe(200);
    expect(set.body).toEqual({
      url,
      configured: true,
      cookies: ['session'],
      headers: ['Authorization'],
      loginSteps: 1,
    });
    const [read] = await both('credentials', { url }, { url });
    expect(read.body).toEqual(set.body);
    expect(JSON.stringify(read.body)).not.toContain(secret);
    expect(read.headers.get('cache-control')).toBe('no-store');
    // Another user's project looks like none at all.
    const [theirs] = await both('credentials', { url }, { url }, { token: bob });
    expect(theirs.status).toBe(404);

    // Secrets never in a URL, and no change by GET.
    await refusedByGet('credentials', { url, auth: 'x' });
    await refusedByGet('credentials', { url, clear: 'true' });
    expect((await both('credentials', { url }, { url }))[0].body).toEqual(set.body);
    const cases: Array<[unknown, RegExp]> = [
      [{ url, auth: { cookies: [{ name: 'bad name', value: 'v' }] } }, /a cookie name is a token/],
      [{ url, auth: {} }, /give cookies, headers or login steps/],
      [{ url, auth: { headers: { Host: 'evil.example' } } }, /the browser's to set/],
      [{ url, auth: { login: [{ action: 'goto', url: 'javascript:alert(1)' }] } }, /login/],
      [{ url, clear: 'yes' }, /clear must be true or false/],
      [{ url, clear: true, auth: { cookies: [{ name: 'a', value: 'b' }] } }, /do not go together/],
      [{ clear: true }, /url is required/],
    ];
    for (const [body, pattern] of cases) {
      const reply = await post('credentials', body);
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(errorsOf(reply)).toMatch(pattern);
    }
    const cleared = await post('credentials', { url, clear: true });
    expect(cleared.body).toEqual({ url, configured: false, cookies: [], headers: [], loginSteps: 0 });
    expect((await both('credentials', { url }, { url }))[0].body).toEqual(cleared.body);

    // A gateway without PERFWATCH_SECRETS_KEY cannot keep them, and says so.
    const keyless = await startTestGateway({ natsUrl: nats.url, store: gateway.store });
    try {
      const refused = documented(
        'credentials',
        'POST',
        await send(
          keyless.url,
          'credentials',
          'POST',
          { body: { url, auth: { cookies: [{ name: 'a', value: 'b' }] } } },
          { Authorization: alice },
        ),
      );
      expect(refused.status).toBe(503);
      expect(errorsOf(refused)).toMatch(/no PERFWATCH_SECRETS_KEY/);
    } finally {
      await keyless.stop();
    }
  });
});

describe('/v1/projects', () => {
  it("lists the caller's projects by URL with their settings, and only the caller's", async () => {
    const [mine] = await both('projects', {}, {});
    expect(mine.status).toBe(200);
    const projects = (mine.body as { projects: Array<{ url: string }> }).projects;
    expect(projects.map((p) => p.url)).toEqual([
      'https://broken.example/',
      'https://half.example/',
      'https://nobody.example/',
      SHOP,
      'https://slow.example/',
    ]);
    expect(projects[3]).toEqual({
      url: SHOP,
      domain: 'shop.example',
      locations: ['london', 'tokyo'],
      defaultLocation: 'london',
      runs: 2,
      schedule: null,
    });
    const [theirs] = await both('projects', {}, {}, { token: bob });
    expect((theirs.body as { projects: Array<{ url: string }> }).projects.map((p) => p.url)).toEqual([
      'https://bob.example/',
    ]);
    // A POST with a url creates a project (projects-write.test.ts); a GET takes no parameter.
    const [extra, odd] = await both('projects', { url: SHOP }, { device: 'mobile' }, { same: false });
    expect(extra.status).toBe(400);
    expect((extra.body as { errors: string[] }).errors.join(' ')).toMatch(/unknown parameter\(s\): url/);
    expect((odd.body as { errors: string[] }).errors.join(' ')).toMatch(/unknown parameter\(s\): device/);
  });
});

describe('authentication, tenancy and the error table', () => {
  it('400 naming the header when Authorization is absent; 401 for a bad or Bearer-less bad token', async () => {
    for (const [path, params] of [
      ['update', { url: SHOP }],
      ['audit', { url: SHOP, date: DAY + 'T00:00:00' }],
      ['compare', { url: SHOP, from: DAY + 'T00:00:00', to: DAY + 'T00:00:01' }],
      ['updates', { url: SHOP }],
      ['overview', { startDate: DAY, endDate: DAY }],
      [`updates/${randomUUID()}`, {}],
      ['projects', {}],
      ['budgets', { url: SHOP }],
      ['webhooks', {}],
      ['annotations', { url: SHOP }],
      ['credentials', { url: SHOP }],
    ] as const) {
      const [missing] = await both(path, params, path === 'overview' ? { dateRange: params } : params, { token: null });
      expect(missing.status).toBe(400);
      expect(`${(missing.body as { message: string }).message}`).toMatch(/Authorization/);
      const [bad] = await both(path, params, path === 'overview' ? { dateRange: params } : params, {
        token: 'Bearer pw_' + 'x'.repeat(43),
      });
      expect(bad.status).toBe(401);
    }
  });

  it('another user cannot read, update, list or even detect a project', async () => {
    const date = ((await both('updates', { url: SHOP }, { url: SHOP }))[0].body as { mobile: Array<{ date: string }> })
      .mobile[0]!.date;
    const probes = [
      ['update', { url: SHOP }],
      ['audit', { url: SHOP, date }],
      ['compare', { url: SHOP, from: date, to: date }],
      ['updates', { url: SHOP }],
      ['budgets', { url: SHOP }],
      ['annotations', { url: SHOP }],
      ['credentials', { url: SHOP }],
    ] as const;
    const nowhere = 'https://never-added.example/';
    for (const [path, params] of probes) {
      const [theirs] = await both(path, params, params, { token: bob });
      const [nobodys] = await both(path, { ...params, url: nowhere }, { ...params, url: nowhere }, { token: bob });
      expect(theirs.status, path).toBe(404);
      expect(theirs.body).toEqual(JSON.parse(JSON.stringify(nobodys.body).replaceAll(nowhere, SHOP)));
    }
    // A webhook for their project: added by POST only.
    const hook = { targetUrl: 'http://127.0.0.1:9/hook', project: SHOP };
    const theirHook = await post('webhooks', hook, bob);
    const nobodysHook = await post('webhooks', { ...hook, project: nowhere }, bob);
    expect(theirHook.status).toBe(404);
    expect(theirHook.body).toEqual(JSON.parse(JSON.stringify(nobodysHook.body).replaceAll(nowhere, SHOP)));
    const [overview] = await both(
      'overview',
      { startDate: DAY, endDate: DAY },
      { dateRange: { startDate: DAY, endDate: DAY } },
      { token: bob },
    );
    expect(overview.body).toEqual([]);
  });

  it('405 with Allow for every other method; unknown routes 404; nothing is HTML', async () => {
    for (const path of [
      'update',
      'audit',
      'compare',
      'updates',
      'overview',
      'budgets',
      'webhooks',
      'annotations',
      'credentials',
    ]) {
      // /v1/projects takes PATCH and DELETE too (projects-write.test.ts).
      for (const method of ['PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
        const res = await fetch(`${gateway.url}/v1/${path}`, { method, headers: { Authorization: alice } });
        expect(res.status).toBe(405);
        expect(res.headers.get('allow')).toBe('GET, POST');
        const body = errorEnvelopeSchema.parse(await res.json());
        expect(body.message).toContain(method);
        expect(body.errors.join(' ')).toMatch(/GET.*POST/);
      }
      const head = await fetch(`${gateway.url}/v1/${path}?url=${SHOP}`, {
        method: 'HEAD',
        headers: { Authorization: alice },
      });
      expect(head.status).toBe(405);
    }
    for (const path of ['/v1/nope', '/nope', '/v2/update']) {
      const res = await fetch(`${gateway.url}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(errorEnvelopeSchema.parse(await res.json()).status).toBe('NOT_FOUND');
    }
  });

  it('406 when Accept excludes JSON, 413 for a body over the limit, 415 for a body that is not JSON', async () => {
    for (const path of [
      'update',
      'audit',
      'compare',
      'updates',
      'overview',
      `updates/${randomUUID()}`,
      'projects',
      'budgets',
      'webhooks',
      'annotations',
      'credentials',
    ]) {
      const [notAcceptable] = await both(path, { url: SHOP }, { url: SHOP }, { headers: { Accept: 'text/html' } });
      expect(notAcceptable.status).toBe(406);
      const big = documented(
        path,
        'POST',
        await send(
          gateway.url,
          path,
          'POST',
          { raw: JSON.stringify({ url: SHOP, pad: 'x'.repeat(200_000) }) },
          { Authorization: alice },
        ),
      );
      expect(big.status).toBe(413);
      const form = documented(
        path,
        'POST',
        await send(
          gateway.url,
          path,
          'POST',
          { raw: 'url=x', contentType: 'application/x-www-form-urlencoded' },
          { Authorization: alice },
        ),
      );
      expect(form.status).toBe(415);
    }
    const ok = await send(
      gateway.url,
      'updates',
      'GET',
      { query: { url: SHOP } },
      { Authorization: alice, Accept: 'application/json, text/html;q=0.5' },
    );
    expect(ok.status).toBe(200);
  });

  it('429 with Retry-After once a user passes its limit, over all of its tokens', async () => {
    const limited = await startTestGateway({ natsUrl: nats.url, rateLimits: { updates: 1, reads: 2 } });
    try {
      const { token } = await limited.admin.createUser('busy');
      const { token: calm } = await limited.admin.createUser('calm');
      await limited.admin.addProject('busy', 'https://busy.example/', { locations: ['sao_paulo'], runs: 1 });
      const url = 'https://busy.example/';
      const audit = { url, date: `${DAY}T00:00:00` };
      const overview = [{ startDate: DAY, endDate: DAY }, { dateRange: { startDate: DAY, endDate: DAY } }] as const;

      // Reads: two allowed a minute, counted over every read endpoint.
      const [first] = await both('audit', audit, audit, { token, base: limited.url });
      expect(first.status).toBe(404);
      const compare = { url, from: audit.date, to: audit.date };
      for (const [path, get, post] of [
        ['updates', { url }, { url }],
        ['overview', ...overview],
        ['audit', audit, audit],
        ['compare', compare, compare],
        [`updates/${randomUUID()}`, {}, {}],
        ['projects', {}, {}],
        ['budgets', { url }, { url }],
        ['webhooks', {}, {}],
        ['annotations', { url }, { url }],
        ['credentials', { url }, { url }],
      ] as const) {
        const [over] = await both(path, get, post, { token, base: limited.url });
        expect(over.status, path).toBe(429);
        expect(errorEnvelopeSchema.parse(over.body).status).toBe('TOO_MANY_REQUESTS');
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const params = method === 'PUT' ? { body: { url } } : { query: { url } };
        const reply = await send(limited.url, 'projects/repository', method, params, { Authorization: token });
        expect(documented('projects/repository', method, reply).status).toBe(429);
      }
      // The same user's other token shares the count; another user has its own.
      const { token: second } = await limited.admin.createToken('busy');
      const [same] = await both('overview', ...overview, { token: second, base: limited.url });
      expect(same.status).toBe(429);
      const [other] = await both('overview', ...overview, { token: calm, base: limited.url });
      expect(other.status).toBe(200);

      // Updates: one a minute.
      const once = documented(
        'update',
        'GET',
        await send(limited.url, 'update', 'GET', { query: { url } }, { Authorization: token }),
      );
      expect(once.status).toBe(503);
      const [again] = await both('update', { url }, { url }, { token, base: limited.url });
      expect(again.status).toBe(429);
      expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await limited.stop();
    }
  });

  it('503 with Retry-After when the places for reads of stored results stay taken', { timeout: 120_000 }, async () => {
    const real = await testStore();
    const { token } = await (await import('@perfwatch/gateway')).createAdmin(real).createUser('crowded');
    await (await import('@perfwatch/gateway')).createAdmin(real).addProject('crowded', SHOP, { locations: ['london'] });
    // A snapshot whose result is read only when the test lets it: its read holds the one place.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let taken = () => {};
    const placeTaken = new Promise<void>((resolve) => (taken = resolve));
    const date = new Date(`${DAY}T00:00:00Z`);
    const slow = new Proxy(real, {
      get(target, property, receiver) {
        if (property === 'findSnapshotCells')
          return async () => ({
            id: 's',
            projectId: 'p',
            updateId: 'u',
            url: SHOP,
            date,
            updateType: 'manual',
            available: [{ device: 'mobile', location: 'london' }],
            missing: [],
            results: [
              {
                device: 'mobile',
                location: 'london',
                median: 1,
                runs: [],
                crux: { url: null },
                elementCount: null,
                resultJson: async () => {
                  taken();
                  await held;
                  return Buffer.from('{"audits":{}}');
                },
              },
            ],
          });
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as MongoStore;
    const startAsync = () => Promise.reject(new Error('this test asks for no async update'));
    const server: GatewayServer = await createServer({
      store: slow,
      updates: createUpdateService({
        dispatcher: createNatsDispatcher({ nc: agentConn, logger: silentLogger }),
        store: slow,
        logger: silentLogger,
        runTimeoutMs: 1000,
        replyTimeoutMs: 1000,
      }),
      startAsync,
      logger: silentLogger,
      port: 0,
      host: '127.0.0.1',
      ...httpOptionsOf(gatewayConfigWith({})),
      maxHeavyReads: 1,
    });
    try {
      const audit = { url: SHOP, date: `${DAY}T00:00:00` };
      const compare = { url: SHOP, from: audit.date, to: audit.date };
      const first = send(server.url, 'audit', 'GET', { query: audit }, { Authorization: token });
      await placeTaken;
      const refused = await Promise.all([
        both('audit', audit, audit, { token, base: server.url }),
        both('compare', compare, compare, { token, base: server.url }),
      ]);
      for (const reply of refused.flat()) {
        expect(reply.status).toBe(503);
        expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(errorEnvelopeSchema.parse(reply.body).errors.join()).toMatch(/at most 1 reads of stored results/);
      }
      release();
      expect((await first).status).toBe(200);
    } finally {
      release();
      await server.close();
      await real.close();
    }
  });

  it('500 asks to try again and leaks nothing when the database fails', async () => {
    const real = await testStore();
    const { token } = await (await import('@perfwatch/gateway')).createAdmin(real).createUser('unlucky');
    // The store answers token look-ups, then fails: a database that breaks mid-request.
    const failing = new Proxy(real, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (property === 'findToken' || typeof value !== 'function')
          return typeof value === 'function' ? value.bind(target) : value;
        return () => {
          throw new Error('connection reset by peer at /srv/db.ts:12');
        };
      },
    }) as MongoStore;
    const updates = createUpdateService({
      dispatcher: createNatsDispatcher({ nc: agentConn, logger: silentLogger }),
      store: failing,
      logger: silentLogger,
      runTimeoutMs: 1000,
      replyTimeoutMs: 1000,
    });
    const startAsync = () => Promise.reject(new Error('this test asks for no async update'));
    const server: GatewayServer = await createServer({
      store: failing,
      updates,
      startAsync,
      logger: silentLogger,
      port: 0,
      host: '127.0.0.1',
      ...httpOptionsOf(gatewayConfigWith({})),
    });
    try {
      for (const [path, params] of [
        ['update', { url: SHOP }],
        ['audit', { url: SHOP, date: `${DAY}T00:00:00` }],
        ['compare', { url: SHOP, from: `${DAY}T00:00:00`, to: `${DAY}T00:00:01` }],
        ['updates', { url: SHOP }],
        ['overview', { startDate: DAY, endDate: DAY }],
        [`updates/${randomUUID()}`, {}],
        ['projects', {}],
        ['budgets', { url: SHOP }],
        ['webhooks', {}],
        ['annotations', { url: SHOP }],
        ['credentials', { url: SHOP }],
      ] as const) {
        const [reply] = await both(path, params, path === 'overview' ? { dateRange: params } : params, {
          token,
          base: server.url,
        });
        expect(reply.status).toBe(500);
        const body = errorEnvelopeSchema.parse(reply.body);
        expect(body.status).toBe('INTERNAL_SERVER_ERROR');
        expect(body.message).toMatch(/try again/i);
        expect(JSON.stringify(body)).not.toMatch(/connection reset|db\.ts/);
      }
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const link = { url: SHOP, forge: 'github', repository: 'acme/shop', token: 't', webhookSecret: 's'.repeat(16) };
        const params = method === 'PUT' ? { body: link } : { query: { url: SHOP } };
        const reply = await send(server.url, 'projects/repository', method, params, { Authorization: token });
        expect(documented('projects/repository', method, reply).status).toBe(500);
      }
    } finally {
      await server.close();
      await real.close();
    }
  });
});

describe('/v1/projects/repository', () => {
  const path = 'projects/repository';
  const url = 'https://half.example/';
  const link = {
    url,
    forge: 'gitea',
    repository: 'acme/half',
    apiUrl: 'https://gitea.example/api/v1',
    token: 'gitea-api-token-of-the-conformance-suite',
    webhookSecret: 'a-webhook-secret-of-the-suite',
    previewUrl: 'https://pr-{pullRequest}.preview.example',
  };
  const call = async (
    method: 'GET' | 'PUT' | 'DELETE',
    params: { query?: Params; body?: unknown; raw?: string; contentType?: string },
    headers: Record<string, string> = { Authorization: alice },
    base = gateway.url,
  ) => documented(path, method, await send(base, path, method, params, headers));

  it('links a project by PUT, reads it by GET, removes it by DELETE, never shows a secret; 404 when none', async () => {
    expect((await call('GET', { query: { url } })).status).toBe(404);
    const put = await call('PUT', { body: link });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      url,
      forge: 'gitea',
      repository: 'acme/half',
      apiUrl: 'https://gitea.example/api/v1',
      previewUrl: 'https://pr-{pullRequest}.preview.example',
      defaultBranch: 'main',
      tokenSet: true,
      webhookSecretSet: true,
    });
    expect((await call('GET', { query: { url } })).body).toEqual(put.body);
    // Another user's project is a missing one.
    expect((await call('GET', { query: { url } }, { Authorization: bob })).status).toBe(404);
    expect((await call('PUT', { body: { ...link, url: 'https://nope.example/' } })).status).toBe(404);
    expect((await call('DELETE', { query: { url } })).body).toEqual({ url, removed: true });
    expect((await call('DELETE', { query: { url } })).status).toBe(404);
  });

  it('400 for a link it cannot keep, 401, 406 by every method, 413 and 415 by PUT, 503 without a key', async () => {
    const bad = await call('PUT', { body: { ...link, webhookSecret: 'short' } });
    expect(bad.status).toBe(400);
    expect(errorsOf(bad)).toMatch(/webhookSecret must have at least 16/);
    const owner = await call('PUT', { body: { ...link, forge: 'github', repository: 'no-owner' } });
    expect(errorsOf(owner)).toMatch(/repository must be owner\/name/);
    expect(errorsOf(await call('PUT', { body: { ...link, previewUrl: undefined } }))).toMatch(/previewUrl is required/);
    for (const method of ['GET', 'DELETE'] as const) {
      expect((await call(method, { query: {} })).status).toBe(400);
      expect((await call(method, { query: { url } }, { Authorization: 'pw_nope' })).status).toBe(401);
      const html = await call(method, { query: { url } }, { Authorization: alice, Accept: 'text/html' });
      expect(html.status).toBe(406);
    }
    expect((await call('PUT', { body: link }, { Authorization: 'pw_nope' })).status).toBe(401);
    expect((await call('PUT', { body: link }, { Authorization: alice, Accept: 'text/html' })).status).toBe(406);
    const big = await call('PUT', { raw: JSON.stringify({ ...link, pad: 'x'.repeat(200_000) }) });
    expect(big.status).toBe(413);
    expect((await call('PUT', { raw: 'url=x', contentType: 'application/x-www-form-urlencoded' })).status).toBe(415);
    const keyless = await startTestGateway({ natsUrl: nats.url, store: gateway.store });
    try {
      const refused = await call('PUT', { body: link }, { Authorization: alice }, keyless.url);
      expect(refused.status).toBe(503);
      expect(errorsOf(refused)).toMatch(/no PERFWATCH_SECRETS_KEY/);
    } finally {
      await keyless.stop();
    }
  });
});

describe('/v1/openapi.json', () => {
  it('is valid OpenAPI 3.1, and every documented response was seen to match an actual one', () => {
    expect(checker.version).toMatch(/^3\.1/);
    // 4 endpoints × 2 methods × their statuses.
    expect(checker.documented().length).toBeGreaterThan(60);
    // A project's creation, change and removal are seen by projects-write.test.ts, every 403 and every status of
    // /v1/tokens and /v1/members by roles-and-tokens.test.ts, those of /v1/audit-log by audit-log.test.ts,
    // those of /v1/sites by sites.test.ts, of /v1/sites/{id}/overview by site-overview.test.ts, of /v1/artifacts by artifacts.test.ts,
    // of /v1/projects/flow by flows.test.ts.
    const writes =
      /^(patch|delete) \/v1\/projects |^post \/v1\/projects 409$| 403$|^\w+ \/v1\/(tokens|members|audit-log|sites|artifacts|projects\/flow)[ /]/;
    const missing = checker.documented().filter((key) => !checker.seen.has(key) && !writes.test(key));
    expect(missing).toEqual([]);
  });

  it('serves a human-readable reference from the package itself', async () => {
    const page = await fetch(`${gateway.url}/v1/docs/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('swagger-ui');
    expect(html).not.toMatch(/https?:\/\/(cdn|unpkg|jsdelivr)/);
    const init = await (await fetch(`${gateway.url}/v1/docs/swagger-initializer.js`)).text();
    expect(init).toContain('../openapi.json');
    expect((await fetch(`${gateway.url}/v1/docs/swagger-ui-bundle.js`)).status).toBe(200);
  });
});

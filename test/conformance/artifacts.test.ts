import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_ENDPOINTS,
  ARTIFACT_CONTENT_TYPES,
  auditResultSchema,
  formatApiDateTime,
  lighthouseKpis,
  type ArtifactKind,
  type CellArtifacts,
  type Device,
  type Location,
} from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import type { MongoStore, ProjectRecord } from '@perfwatch/gateway';
import { createFsArtifactStore } from '../../gateway/src/artifacts/store/fs-artifact-store.ts';
import type { ArtifactStore } from '../../gateway/src/artifacts/store/artifact-store.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import {
  documented as documentedBy,
  errorsOf,
  newToken,
  send,
  type Params,
  type Reply,
} from '../support/api-requests.ts';
import { breakableStore } from '../support/breakable-store.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { newCell } from '../support/new-cells.ts';
import { isolatedNats, silentLogger, startTestGateway, testStore, type TestGateway } from '../support/test-services.ts';

// Reading artifacts (issue 35, item 3) as a client written from the spec does: a real gateway
// on a real nats-server and MongoDB-wire server, its artifacts in a real fs artifact store on
// disk, snapshots written as the update service writes them. Each kind answered with its bytes
// and headers (gzip passed through, or inflated for a client that takes none); every state a
// cell's artifact can be in (never asked, missing, expired, gone from the store, the store
// down); tenancy exactly as /v1/audit's; every answer checked against /v1/openapi.json.

const SHOP = 'https://shop.example/';
const OTHER = 'https://other.example/';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const RETENTION_DAYS = 30;
const second = (ms: number) => new Date(Math.floor(ms / 1000) * 1000);
/** A snapshot with its artifacts kept; one past the retention; one whose artifacts were stored and then lost. */
const RECENT = second(Date.now() - HOUR);
const OLD = second(Date.now() - 40 * DAY);
const LOST = second(Date.now() - 2 * HOUR);

const REQUESTS = [
  '{"url":"https://shop.example/","resourceType":"Document","transferSize":5120,"networkRequestTime":0,"networkEndTime":210}',
  '{"url":"https://shop.example/hero.jpg","resourceType":"Image","transferSize":81234,"networkRequestTime":240,"networkEndTime":610,"lcp":true}',
  '{"end":true,"requests":2,"written":2,"truncated":false}',
]
  .map((line) => `${line}\n`)
  .join('');
const TRACE = JSON.stringify({
  traceEvents: [{ name: 'TracingStartedInBrowser', ph: 'I', ts: 1, pid: 1, tid: 1, args: {} }],
  metadata: { source: 'DevTools' },
});
const BYTES: Record<ArtifactKind, Buffer> = { requests: gzipSync(REQUESTS), trace: gzipSync(TRACE) };
const AD_REQUEST = {
  url: 'https://ads.example/tag.js',
  entity: 'Ads Co',
  transferSize: 48_213,
  resourceType: 'Script',
};
const FRAMES = [300, 600, 900].map((timing) => ({ timing, data: 'data:image/jpeg;base64,/9j/4AAQSkZJRg==' }));

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let store: MongoStore;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
let dir: string;
let fsStore: ArtifactStore;
let shop: ProjectRecord;
let alice: string;
let bob: string;
let ci: string;
/** While true, the artifact store's reads fail (a disk or an S3 server gone); `broken`: the database's. */
let storeDown = false;
let agent: Agent | undefined;
let broken = new Set<string>();

/** The fs store, its reads failing while `storeDown`. */
function downable(real: ArtifactStore): ArtifactStore {
  return {
    put: (...args) => real.put(...args),
    get: (key) => (storeDown ? Promise.reject(new Error('EIO: i/o error, open /artifacts/…')) : real.get(key)),
    removeSnapshot: (...args) => real.removeSnapshot(...args),
    removeOlderThan: (cutoff) => real.removeOlderThan(cutoff),
  };
}

/** A cell as the update service writes it: a real result (with its filmstrip), its artifacts' states. */
function cell(device: Device, location: Location, artifacts?: CellArtifacts) {
  const lighthouse = loadLhr(device, 1);
  lighthouse.audits['screenshot-thumbnails'] = {
    ...lighthouse.audits['screenshot-thumbnails']!,
    details: { type: 'filmstrip', items: FRAMES.map((f) => ({ ...f, timestamp: f.timing * 1000 })) },
  };
  // A third party's script besides the fixture site's own six requests (entities as Lighthouse classifies them).
  (lighthouse['entities'] as unknown[]).push({ name: 'Ads Co', origins: ['https://ads.example'], isFirstParty: false });
  (lighthouse.audits['network-requests']!.details as { items: unknown[] }).items.push(AD_REQUEST);
  const kpis = lighthouseKpis(lighthouse);
  return newCell({
    device,
    location,
    median: 1,
    runs: [],
    lighthouse,
    crux: { url: null },
    elementCount: 9,
    kpis,
    ...(artifacts ? { artifacts } : {}),
  });
}

const stored = (kind: ArtifactKind) => ({ state: 'stored' as const, bytes: BYTES[kind].byteLength });
const MISSING_REASON = 'TRANSFER_FAILED: agent london-1 stopped answering after chunk 3';

/** A snapshot of shop at `date`, its mobile/london artifacts in the store when `keep`. */
async function seed(date: Date, updateId: string, keep: boolean): Promise<void> {
  await store.saveSnapshot({
    project: shop,
    updateId,
    date,
    updateType: 'manual',
    results: [
      cell('mobile', 'london', { requests: stored('requests'), trace: stored('trace') }),
      cell('mobile', 'tokyo', { requests: { state: 'missing', reason: MISSING_REASON } }),
      cell('desktop', 'london'),
    ],
  });
  if (!keep) return;
  for (const kind of ['requests', 'trace'] as const) {
    const key = {
      orgId: shop.userId,
      projectId: shop.id,
      snapshotId: updateId,
      device: 'mobile' as const,
      location: 'london' as const,
      kind,
    };
    await fsStore.put(key, Readable.from([BYTES[kind]]), {
      maxBytes: 1_000_000,
      contentType: ARTIFACT_CONTENT_TYPES[kind],
      contentEncoding: 'gzip',
    });
  }
}

beforeAll(async () => {
  nats = await isolatedNats();
  store = await testStore();
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifacts-'));
  fsStore = createFsArtifactStore({ dir });
  gateway = await startTestGateway({
    natsUrl: nats.url,
    store: breakableStore(store, (method) => broken.has(method)),
    artifacts: downable(fsStore),
    config: { ARTIFACT_RETENTION_DAYS: RETENTION_DAYS },
  });
  ({ token: alice } = await gateway.admin.createUser('alice'));
  ({ token: bob } = await gateway.admin.createUser('bob'));
  shop = await gateway.admin.addProject('alice', SHOP, { locations: ['london', 'tokyo'], defaultLocation: 'london' });
  await gateway.admin.addProject('alice', OTHER, { locations: ['london'] });
  await gateway.admin.addProject('bob', SHOP, { locations: ['london'] });
  ci = await newToken(gateway.url, alice, { scope: 'ci', projects: [OTHER] });
  await seed(RECENT, 'recent-update', true);
  await seed(OLD, 'old-update', true);
  await seed(LOST, 'lost-update', false);
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
});

afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  await store?.close();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Raw = { status: number; headers: IncomingHttpHeaders; body: Buffer };

/** A request with exactly these headers (fetch always asks for gzip and inflates it): the bytes as sent. */
function raw(method: 'GET' | 'POST', params: Params, headers: Record<string, string>): Promise<Raw> {
  const query = method === 'GET' ? `?${new URLSearchParams(params as Record<string, string>)}` : '';
  const body = method === 'POST' ? JSON.stringify(params) : undefined;
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${gateway.url}/v1/artifacts${query}`, {
      method,
      headers: { ...headers, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** /v1/artifacts by GET or POST, its answer checked against the document. */
async function call(
  method: 'GET' | 'POST',
  params: Params,
  token = alice,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const asked = method === 'GET' ? { query: params } : { body: params };
  return documentedBy(
    checker,
    'artifacts',
    method,
    await send(gateway.url, 'artifacts', method, asked, { Authorization: token, ...headers }),
  );
}

const cellOf = (date: Date, kind: string, more: Params = {}): Params => ({
  url: SHOP,
  date: formatApiDateTime(date),
  device: 'mobile',
  kind,
  ...more,
});

describe('/v1/artifacts: the kinds', () => {
  it('requests: the stored gzip passed through when Accept-Encoding takes gzip, as NDJSON', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const reply = await raw(method, cellOf(RECENT, 'requests'), {
        Authorization: alice,
        'Accept-Encoding': 'gzip, br',
      });
      expect(reply.status, reply.body.toString()).toBe(200);
      expect(reply.headers['content-type']).toMatch(/^application\/x-ndjson/);
      expect(reply.headers['content-encoding']).toBe('gzip');
      expect(reply.headers['content-length']).toBe(String(BYTES.requests.byteLength));
      expect(reply.headers['vary']).toMatch(/Accept-Encoding/);
      expect(reply.body.equals(BYTES.requests)).toBe(true);
    }
  });

  it('requests: inflated on the way out for a client that takes no gzip, one JSON line per request and the end line', async () => {
    for (const encoding of [{}, { 'Accept-Encoding': 'identity' }] as Record<string, string>[]) {
      const reply = await raw('GET', cellOf(RECENT, 'requests'), { Authorization: alice, ...encoding });
      expect(reply.status).toBe(200);
      expect(reply.headers['content-encoding']).toBeUndefined();
      expect(reply.body.toString('utf8')).toBe(REQUESTS);
      const lines = reply.body
        .toString('utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.at(-1)).toEqual({ end: true, requests: 2, written: 2, truncated: false });
    }
  });

  it('trace: a file to open in DevTools or Perfetto, named for the page, the date and the cell', async () => {
    const reply = await raw('GET', cellOf(RECENT, 'trace'), { Authorization: alice });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    const name = `perfwatch-shop.example-${formatApiDateTime(RECENT).replaceAll(':', '-')}-mobile-london.trace.json`;
    expect(reply.headers['content-disposition']).toBe(`attachment; filename="${name}"`);
    expect(reply.body.toString('utf8')).toBe(TRACE);
    // fetch asks for gzip and inflates it: what a browser's download gets, and the document's Trace.
    const fetched = await call('POST', cellOf(RECENT, 'trace'));
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-encoding')).toBe('gzip');
    expect(fetched.body).toEqual(JSON.parse(TRACE));
  });

  it("filmstrip: the stored result's frames, for the project's default location when none is named", async () => {
    for (const method of ['GET', 'POST'] as const) {
      const reply = await call(method, cellOf(RECENT, 'filmstrip'));
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(API_ENDPOINTS.artifacts.answer.parse(reply.body)).toEqual({
        url: SHOP,
        date: formatApiDateTime(RECENT),
        device: 'mobile',
        location: 'london',
        frames: FRAMES,
      });
    }
    const tokyo = await call('GET', cellOf(RECENT, 'filmstrip', { location: 'tokyo' }));
    expect(tokyo.body).toMatchObject({ location: 'tokyo', frames: FRAMES });
  });

  it("third-parties: each entity's cost in the stored result, the first party's and the ad script's", async () => {
    for (const method of ['GET', 'POST'] as const) {
      const reply = await call(method, cellOf(RECENT, 'third-parties', { location: 'tokyo' }));
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      const answer = API_ENDPOINTS.artifacts.answer.parse(reply.body);
      expect(answer).toMatchObject({ url: SHOP, date: formatApiDateTime(RECENT), device: 'mobile', location: 'tokyo' });
      const entities = (answer as { entities: Array<{ entity: string }> }).entities;
      expect(entities.find((e) => e.entity === 'Ads Co')).toMatchObject({
        firstParty: false,
        transferSize: AD_REQUEST.transferSize,
        requests: 1,
      });
      expect(entities.find((e) => e.entity === '127.0.0.1')).toMatchObject({ firstParty: true, requests: 6 });
    }
  });
});

describe('/v1/artifacts: states, tenancy and errors', () => {
  it('another organisation and a ci token outside its projects get exactly the 404 of /v1/audit', async () => {
    for (const token of [bob, ci]) {
      for (const kind of ['requests', 'trace', 'filmstrip']) {
        const reply = await call('GET', cellOf(RECENT, kind), token);
        const audit = await send(
          gateway.url,
          'audit',
          'GET',
          { query: { url: SHOP, date: formatApiDateTime(RECENT) } },
          { Authorization: token },
        );
        // Bob has a project at the same URL, without snapshots: his own, whose 404 says "no snapshot".
        expect([reply.status, reply.body]).toEqual([404, audit.body]);
        expect(JSON.stringify(reply.body)).not.toContain(shop.id);
      }
    }
    expect(errorsOf(await call('GET', cellOf(RECENT, 'trace'), ci))).toMatch(/no project of yours has the URL/);
    expect(errorsOf(await call('GET', cellOf(RECENT, 'trace'), bob))).toMatch(/no snapshot at/);
  });

  it('404 naming the reason: missing, never asked, expired, gone from the store; no such snapshot or cell', async () => {
    const missing = await call('GET', cellOf(RECENT, 'requests', { location: 'tokyo' }));
    expect([missing.status, errorsOf(missing)]).toEqual([404, `kind: not kept: ${MISSING_REASON}`]);
    const neverAsked = await call('POST', cellOf(RECENT, 'trace', { location: 'tokyo' }));
    expect(neverAsked.status).toBe(404);
    expect(errorsOf(neverAsked)).toMatch(/^kind: not kept: the trace of this cell were never asked for/);
    expect(errorsOf(await call('GET', { ...cellOf(RECENT, 'requests'), device: 'desktop' }))).toMatch(
      /never asked for/,
    );
    const expiry = formatApiDateTime(new Date(OLD.getTime() + RETENTION_DAYS * DAY));
    for (const kind of ['requests', 'trace']) {
      const expired = await call('GET', cellOf(OLD, kind));
      expect(expired.status).toBe(404);
      expect(expired.body).toMatchObject({ message: 'The artifact has expired.' });
      expect(errorsOf(expired)).toContain(`expired on ${expiry}`);
      const gone = await call('GET', cellOf(LOST, kind));
      expect(gone.status).toBe(404);
      expect(gone.body).toMatchObject({ message: 'The artifact is no longer in the artifact store.' });
    }
    const noSnapshot = await call('GET', cellOf(new Date(RECENT.getTime() + 1000), 'requests'));
    expect([noSnapshot.status, errorsOf(noSnapshot)]).toEqual([404, expect.stringMatching(/no snapshot at/)]);
    const noCell = await call('GET', cellOf(RECENT, 'requests', { location: 'frankfurt' }));
    expect(errorsOf(noCell)).toMatch(/has no mobile result from frankfurt/);
  });

  it('503 with Retry-After while the artifact store does not answer; served again once it does', async () => {
    storeDown = true;
    try {
      for (const method of ['GET', 'POST'] as const) {
        const reply = await call(method, cellOf(RECENT, 'trace'));
        expect(reply.status).toBe(503);
        expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(JSON.stringify(reply.body)).not.toMatch(/EIO|\/artifacts\//);
      }
      // The filmstrip is read from the stored result: the artifact store is not asked.
      expect((await call('GET', cellOf(RECENT, 'filmstrip'))).status).toBe(200);
    } finally {
      storeDown = false;
    }
    expect((await call('GET', cellOf(RECENT, 'trace'))).status).toBe(200);
  });

  it('400 in the envelope for a bad or missing parameter, each named', async () => {
    const cases: Array<[Params, RegExp]> = [
      [cellOf(RECENT, 'har'), /kind must be one of requests, trace, filmstrip, third-parties/],
      [{ ...cellOf(RECENT, 'trace'), device: undefined }, /device/],
      [{ ...cellOf(RECENT, 'trace'), date: 'yesterday' }, /date must be a UTC date-time/],
      [cellOf(RECENT, 'trace', { location: 'mars' }), /location must be one of/],
      [cellOf(RECENT, 'trace', { format: 'har' }), /unknown parameter\(s\): format/],
      [{ ...cellOf(RECENT, 'trace'), url: 'shop.example' }, /url must be an absolute http\(s\) URL/],
    ];
    for (const [params, error] of cases)
      for (const method of ['GET', 'POST'] as const) {
        const reply = await call(method, params);
        expect(reply.status).toBe(400);
        expect(errorsOf(reply)).toMatch(error);
      }
  });

  it("401, 406, 413, 415 and 500 as every read's", async () => {
    for (const method of ['GET', 'POST'] as const) {
      expect((await call(method, cellOf(RECENT, 'trace'), 'pw_nope')).status).toBe(401);
      expect((await call(method, cellOf(RECENT, 'trace'), alice, { Accept: 'text/html' })).status).toBe(406);
    }
    const big = await send(
      gateway.url,
      'artifacts',
      'POST',
      { raw: JSON.stringify({ pad: 'x'.repeat(200_000) }) },
      { Authorization: alice },
    );
    expect(documentedBy(checker, 'artifacts', 'POST', big).status).toBe(413);
    const form = await send(
      gateway.url,
      'artifacts',
      'POST',
      { raw: 'kind=trace', contentType: 'application/x-www-form-urlencoded' },
      { Authorization: alice },
    );
    expect(documentedBy(checker, 'artifacts', 'POST', form).status).toBe(415);
    broken = new Set(['findSnapshotCells']);
    try {
      for (const method of ['GET', 'POST'] as const) {
        const failed = await call(method, cellOf(RECENT, 'trace'));
        expect(failed.status).toBe(500);
        expect(JSON.stringify(failed.body)).not.toMatch(/connection reset|db\.ts/);
      }
    } finally {
      broken = new Set();
    }
  });

  it('429 with Retry-After past the per-minute limit of reads', async () => {
    const limited = await startTestGateway({
      natsUrl: nats.url,
      store,
      artifacts: downable(fsStore),
      rateLimits: { updates: 1, reads: 1 },
    });
    try {
      const first = await send(
        limited.url,
        'artifacts',
        'GET',
        { query: cellOf(RECENT, 'filmstrip') },
        { Authorization: alice },
      );
      expect(first.status).toBe(200);
      for (const method of ['GET', 'POST'] as const) {
        const params =
          method === 'GET' ? { query: cellOf(RECENT, 'filmstrip') } : { body: cellOf(RECENT, 'filmstrip') };
        const over = await send(limited.url, 'artifacts', method, params, { Authorization: alice });
        expect(documentedBy(checker, 'artifacts', method, over).status).toBe(429);
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    } finally {
      await limited.stop();
    }
  });

  it('every status documented for /v1/artifacts was seen to match an actual answer (403: no role reads less)', () => {
    const documented = checker.documented().filter((key) => / \/v1\/artifacts /.test(key) && !/ 403$/.test(key));
    expect(documented.length).toBeGreaterThanOrEqual(18);
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

describe('/v1/audit: the cells carry their artifacts', () => {
  it('stored (until when), missing (why), expired (when); none on a cell that kept none', async () => {
    const audit = async (date: Date) => {
      const reply = documentedBy(
        checker,
        'audit',
        'GET',
        await send(
          gateway.url,
          'audit',
          'GET',
          { query: { url: SHOP, date: formatApiDateTime(date) } },
          { Authorization: alice },
        ),
      );
      expect(reply.status).toBe(200);
      return auditResultSchema.parse(reply.body);
    };
    const recent = await audit(RECENT);
    const expires = formatApiDateTime(new Date(RECENT.getTime() + RETENTION_DAYS * DAY));
    expect(recent.mobile!.london!.artifacts).toEqual({
      requests: { ...stored('requests'), expires },
      trace: { ...stored('trace'), expires },
    });
    expect(recent.mobile!.tokyo!.artifacts).toEqual({ requests: { state: 'missing', reason: MISSING_REASON } });
    expect(recent.desktop!.london!.artifacts).toBeUndefined();
    const expired = formatApiDateTime(new Date(OLD.getTime() + RETENTION_DAYS * DAY));
    expect((await audit(OLD)).mobile!.london!.artifacts).toEqual({
      requests: { state: 'expired', expired },
      trace: { state: 'expired', expired },
    });
  });

  it("a sync /v1/update's cells carry them too, as /v1/audit then reads them", async () => {
    const SYNCED = 'https://synced.example/';
    await gateway.admin.addProject('alice', SYNCED, { locations: ['london'], runs: 1, devices: ['mobile'] });
    // An agent answering with captured Lighthouse results: it keeps no artifacts, so the cell says why.
    agent = startAgent({
      nc: gateway.nc,
      location: 'london',
      runner: fixtureRunner(),
      logger: silentLogger,
      agentId: 'a1',
    });
    const update = await send(gateway.url, 'update', 'GET', { query: { url: SYNCED } }, { Authorization: alice });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    const updated = auditResultSchema.parse(documentedBy(checker, 'update', 'GET', update).body).mobile!.london!;
    expect(updated.artifacts?.requests).toMatchObject({ state: 'missing', reason: expect.stringMatching(/\S/) });
    expect(updated.artifacts?.trace).toMatchObject({ state: 'missing' });
    const query = { url: SYNCED, date: updated.lighthouse.date };
    const read = await send(gateway.url, 'audit', 'GET', { query }, { Authorization: alice });
    expect(auditResultSchema.parse(read.body).mobile!.london!.artifacts).toEqual(updated.artifacts);
    const asked = await call('GET', { ...query, device: 'mobile', kind: 'trace' });
    const { reason } = updated.artifacts!.trace as { reason: string };
    expect([asked.status, errorsOf(asked)]).toEqual([404, `kind: not kept: ${reason}`]);
  });
});

import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditResultSchema, errorEnvelopeSchema, projectListSchema, snapshotListSchema } from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import type { MongoStore } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import {
  errorsOf,
  expectRateLimited,
  expectTryAgain,
  ONE_A_MINUTE,
  resourceRequests,
  type Asking,
  type Method,
  type Params,
} from '../support/api-requests.ts';
import { startFakeCrux } from '../support/fake-crux.ts';
import { isolatedNats, silentLogger, startTestGateway, testStore, type TestGateway } from '../support/test-services.ts';
import { breakableStore } from '../support/breakable-store.ts';

// Projects made, changed and removed through the API (issue 33, item 1): POST /v1/projects with
// a url, PATCH, DELETE ?url=, as a client written from the spec sees them, every answer checked
// against /v1/openapi.json, and every status these three document seen. Tenancy as everywhere:
// another user's project is a 404. A real nats-server and MongoDB-wire server; an agent answers
// with captured Lighthouse results.

const SHOP = 'https://shop.example/';
const BOBS = 'https://bob.example/';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let alice: string;
let bob: string;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
/** Set: the store fails every project write and look-up (a database that breaks mid-request). */
let broken = false;

const projects = resourceRequests({
  path: 'projects',
  key: 'url',
  checker: () => checker,
  base: () => gateway.url,
  token: () => alice,
});
const { call, create, patch, remove } = projects;
const listOf = async (token?: string) => projectListSchema.parse((await projects.list(token)).body);

/** The test's store, failing the project calls while `broken` is set. */
const breakable = (store: MongoStore) =>
  breakableStore(
    store,
    (method) => broken && ['addProject', 'findProject', 'setProjectSettings', 'removeProject'].includes(method),
  );

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url, store: breakable(await testStore()) });
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
  await gateway.admin.addProject('bob', BOBS, { locations: ['london'], runs: 1 });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

describe('POST /v1/projects', () => {
  it('creates a project with the admin CLI’s defaults, listed after; an empty POST still lists', async () => {
    const made = await create({ url: 'https://Shop.example', locations: ['london'], runs: 1 });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(made.body).toEqual({
      project: {
        url: SHOP,
        domain: 'shop.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      },
      created: true,
    });
    const bare = await create({ url: 'https://bare.example/' });
    expect(bare.body).toMatchObject({ project: { locations: ['s_carolina'], runs: 3, schedule: null } });
    const listed = await call('POST', {});
    expect(listed.status).toBe(200);
    expect(projectListSchema.parse(listed.body).projects.map((p) => p.url)).toEqual(['https://bare.example/', SHOP]);
    expect((await remove('https://bare.example/')).status).toBe(200);
  });

  it('measures the project it created by an update', async () => {
    const update = await call('POST', { body: { url: SHOP, device: 'mobile' } }, undefined, { path: 'update' });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    const result = auditResultSchema.parse(update.body);
    expect(result.mobile?.london?.runs).toHaveLength(1);
  });

  it('409 CONFLICT for a URL the caller has; another user may have the same URL', async () => {
    const again = await create({ url: SHOP, locations: ['tokyo'] });
    expect(again.status).toBe(409);
    expect(errorEnvelopeSchema.parse(again.body).status).toBe('CONFLICT');
    expect(errorsOf(again)).toContain(SHOP);
    const bobs = await create({ url: SHOP, locations: ['tokyo'] }, bob);
    expect(bobs.status).toBe(200);
    expect((await listOf()).projects.find((p) => p.url === SHOP)?.locations).toEqual(['london']);
    expect((await remove(SHOP, bob)).status).toBe(200);
  });

  it('400 naming the field, by the same rules as perfwatch admin add-project', async () => {
    const url = 'https://refused.example/';
    for (const [body, field] of [
      [{ url, runs: 12 }, /^runs: runs is a whole number from 1 to 9$/m],
      [{ url, runs: 'three' }, /^runs must be a number$/m],
      [{ url, locations: ['london'], defaultLocation: 'tokyo' }, /^defaultLocation: the default location tokyo/m],
      [{ url, schedule: 'every day' }, /^schedule: not a cron expression: every day/m],
      [{ url, locations: ['mars'] }, /^locations\.0: locations must be one of/m],
      [{ url: 'https://user:pw@refused.example/' }, /^url: a project URL must not carry credentials/m],
      [{ url: 'ftp://refused.example/' }, /^url must be an absolute http\(s\) URL$/m],
      [{ locations: ['london'] }, /^url is required to create a project$/m],
      [{ url, device: 'mobile' }, /^unknown parameter\(s\): device$/m],
      [{ url, devices: ['tablet'] }, /^devices\.0: devices must be one of mobile, desktop/m],
      [{ url, devices: [] }, /^devices names at least one device$/m],
      [{ url, devices: 'mobile' }, /^devices must be an array of devices$/m],
      [{ url, crux: 'no' }, /^crux must be true or false$/m],
    ] as const) {
      const reply = await create(body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(errorsOf(reply)).toMatch(field);
    }
    await expect(gateway.admin.addProject('alice', url, { runs: 12 })).rejects.toThrow(
      /^runs is a whole number from 1 to 9$/,
    );
    await expect(gateway.admin.addProject('alice', url, { devices: ['tablet' as 'mobile'] })).rejects.toThrow(
      /^unknown device\(s\) tablet/,
    );
    expect((await listOf()).projects.map((p) => p.url)).not.toContain(url);
  });
});

describe('PATCH /v1/projects', () => {
  it('changes the settings given and keeps the others; the default follows the locations', async () => {
    const changed = await patch({ url: SHOP, locations: ['tokyo', 'london'], schedule: '0 3 * * *' });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body).toMatchObject({
      project: { url: SHOP, locations: ['tokyo', 'london'], defaultLocation: 'london', runs: 1, schedule: '0 3 * * *' },
      created: false,
    });
    const moved = await patch({ url: SHOP, locations: ['tokyo'], schedule: null, runs: 2 });
    expect(moved.body).toMatchObject({ project: { locations: ['tokyo'], defaultLocation: 'tokyo', runs: 2 } });
    expect((await listOf()).projects.find((p) => p.url === SHOP)).toMatchObject({ schedule: null, runs: 2 });
    expect((await patch({ url: SHOP, locations: ['london'] })).status).toBe(200);
  });

  it('400 naming the field; 404 for another user’s project and for none', async () => {
    for (const [body, field] of [
      [{ url: SHOP }, /give at least one of locations, defaultLocation, runs, schedule, devices, crux/],
      [{ url: SHOP, devices: ['mobile', 'watch'] }, /^devices\.1: devices must be one of/m],
      [{ url: SHOP, crux: null }, /^crux must be true or false$/m],
      [{ url: SHOP, defaultLocation: 'tokyo' }, /^defaultLocation: the default location tokyo/m],
      [{ url: SHOP, runs: 0 }, /^runs: /m],
      [{ url: SHOP, budgets: {} }, /^unknown parameter\(s\): budgets$/m],
      [{ runs: 2 }, /^url is required$/m],
    ] as const) {
      const reply = await patch(body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(errorsOf(reply)).toMatch(field);
    }
    for (const [url, token] of [
      [BOBS, alice],
      [SHOP, bob],
      ['https://nobody.example/', alice],
    ] as const) {
      const reply = await patch({ url, runs: 2 }, token);
      expect(reply.status).toBe(404);
      expect(errorsOf(reply)).toContain(url);
    }
    expect((await listOf(bob)).projects[0]).toMatchObject({ url: BOBS, runs: 1 });
  });
});

describe('devices and CrUX opt-in (issue 33)', () => {
  it('a project that sets its devices is measured on those when an update names none, and shows them', async () => {
    const url = 'https://desktop-only.example/';
    const made = await create({ url, locations: ['london'], runs: 1, devices: ['desktop'], crux: false });
    expect(made.body).toMatchObject({ project: { url, devices: ['desktop'], crux: false } });
    expect((await listOf()).projects.find((p) => p.url === url)).toMatchObject({ devices: ['desktop'], crux: false });
    const only = await call('POST', { body: { url } }, undefined, { path: 'update' });
    expect(only.status, JSON.stringify(only.body)).toBe(200);
    expect(Object.keys(auditResultSchema.parse(only.body)).filter((k) => k === 'mobile' || k === 'desktop')).toEqual([
      'desktop',
    ]);
    // Naming a device still measures it; changing the devices changes what the next update measures.
    const named = await call('POST', { body: { url, device: 'mobile' } }, undefined, { path: 'update' });
    expect(auditResultSchema.parse(named.body).mobile?.london).toBeDefined();
    const changed = await patch({ url, devices: ['mobile', 'desktop'], crux: true });
    expect(changed.body).toMatchObject({ project: { devices: ['mobile', 'desktop'], crux: true, runs: 1 } });
    const both = auditResultSchema.parse((await call('POST', { body: { url } }, undefined, { path: 'update' })).body);
    expect([both.mobile?.london, both.desktop?.london].every(Boolean)).toBe(true);
    expect((await remove(url)).status).toBe(200);
  });

  it('a project that never set them answers as before: both devices, no devices or crux member', async () => {
    const shop = (await listOf()).projects.find((p) => p.url === SHOP)!;
    expect(Object.keys(shop).sort()).toEqual(['defaultLocation', 'domain', 'locations', 'runs', 'schedule', 'url']);
    const result = auditResultSchema.parse(
      (await call('POST', { body: { url: SHOP } }, undefined, { path: 'update' })).body,
    );
    expect([result.mobile?.london, result.desktop?.london].every(Boolean)).toBe(true);
  });

  it('a scheduled update measures the devices the project set', async () => {
    const ticking = await startTestGateway({ natsUrl: nats.url, config: { SCHEDULER_INTERVAL_MS: 200 } });
    try {
      const { token } = await ticking.admin.createUser('ticks');
      const url = 'https://ticking.example/';
      const as = { Authorization: token };
      const body = { url, locations: ['london'], runs: 1, devices: ['desktop'], schedule: '* * * * * *' };
      expect((await call('POST', { body }, as, { base: ticking.url })).status).toBe(200);
      const dates = async () =>
        snapshotListSchema.parse(
          (await call('GET', { query: { url } }, as, { base: ticking.url, path: 'updates' })).body,
        );
      await expect.poll(async () => (await dates()).desktop?.length ?? 0, { timeout: 15_000 }).toBeGreaterThan(0);
      expect((await dates()).desktop![0]!.updateType).toBe('scheduled');
      expect((await dates()).mobile ?? []).toEqual([]);
      expect((await call('DELETE', { query: { url } }, as, { base: ticking.url })).status).toBe(200);
    } finally {
      await ticking.stop();
    }
  });

  it('CrUX field data is asked for a project unless it opted out', async () => {
    const crux = await startFakeCrux();
    const keyed = await startTestGateway({ natsUrl: nats.url, cruxEndpoint: crux.endpoint });
    try {
      const { token } = await keyed.admin.createUser('field');
      const asked = (host: string) => crux.requests.some((r) => `${r['url'] ?? ''}${r['origin'] ?? ''}`.includes(host));
      for (const [url, crux] of [
        ['https://field-in.example/', undefined],
        ['https://field-out.example/', false],
      ] as const) {
        const made = await call(
          'POST',
          { body: { url, locations: ['london'], runs: 1, ...(crux === undefined ? {} : { crux }) } },
          { Authorization: token },
          { base: keyed.url },
        );
        expect(made.status).toBe(200);
        const update = await call(
          'POST',
          { body: { url, device: 'mobile' } },
          { Authorization: token },
          { base: keyed.url, path: 'update' },
        );
        expect(update.status, JSON.stringify(update.body)).toBe(200);
      }
      expect(asked('field-in.example')).toBe(true);
      expect(asked('field-out.example')).toBe(false);
    } finally {
      await keyed.stop();
      await crux.close();
    }
  });
});

describe('DELETE /v1/projects', () => {
  it('removes a project with its snapshots; 404 for another user’s, for none, and the second time', async () => {
    const url = 'https://gone.example/';
    await create({ url, locations: ['london'], runs: 1 });
    const update = await call('POST', { body: { url, device: 'mobile' } }, undefined, { path: 'update' });
    expect(update.status).toBe(200);
    expect((await remove(url, bob)).status).toBe(404);
    expect((await remove(BOBS)).status).toBe(404);
    expect(await remove(url)).toMatchObject({ status: 200, body: { url, removed: true } });
    expect((await remove(url)).status).toBe(404);
    expect((await call('GET', { query: { url } }, undefined, { path: 'updates' })).status).toBe(404);
    await create({ url, locations: ['london'], runs: 1 });
    const fresh = await call('GET', { query: { url } }, undefined, { path: 'updates' });
    expect(snapshotListSchema.parse(fresh.body).mobile ?? []).toEqual([]);
    expect((await listOf(bob)).projects.map((p) => p.url)).toEqual([BOBS]);
  });

  it('400 without a url or with another parameter', async () => {
    expect(errorsOf(await call('DELETE', { query: {} }))).toMatch(/^url is required$/m);
    expect(errorsOf(await call('DELETE', { query: { url: SHOP, runs: '2' } }))).toMatch(/unknown parameter\(s\): runs/);
  });
});

describe('/v1/projects: the statuses every write shares', () => {
  const writes: [Method, { query?: Params; body?: unknown }][] = [
    ['POST', { body: { url: 'https://shared.example/' } }],
    ['PATCH', { body: { url: SHOP, runs: 1 } }],
    ['DELETE', { query: { url: 'https://shared.example/' } }],
  ];

  it('400 without a token, 401 with a bad one, 406 when JSON is refused, 405 for PUT', async () => {
    for (const [method, params] of writes) {
      expect(errorsOf(await call(method, params, {}))).toMatch(/Authorization/);
      expect((await call(method, params, { Authorization: 'pw_nope' })).status).toBe(401);
      expect((await call(method, params, { Authorization: alice, Accept: 'text/html' })).status).toBe(406);
    }
    const put = await fetch(`${gateway.url}/v1/projects`, { method: 'PUT', headers: { Authorization: alice } });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, PATCH, DELETE');
  });

  it('413 and 415 for a body it will not read', async () => {
    for (const method of ['POST', 'PATCH'] as const) {
      const big = await call(method, { raw: JSON.stringify({ url: SHOP, pad: 'x'.repeat(200_000) }) });
      expect(big.status).toBe(413);
      const form = await call(method, { raw: 'url=x', contentType: 'application/x-www-form-urlencoded' });
      expect(form.status).toBe(415);
    }
  });

  it('429 with Retry-After past the per-minute limit', async () => {
    await expectRateLimited(
      () => startTestGateway({ natsUrl: nats.url, rateLimits: ONE_A_MINUTE }),
      'busy',
      { request: (at) => call('GET', {}, at.headers, { base: at.base }), status: 200 },
      writes.map(
        ([method, params]) =>
          (at: Asking) =>
            call(method, params, at.headers, { base: at.base }),
      ),
    );
  });

  it('500 asks to try again and leaks nothing when the database fails', async () => {
    await expectTryAgain(
      (on) => (broken = on),
      writes.map(
        ([method, params]) =>
          () =>
            call(method, params),
      ),
    );
  });

  it('every status documented for POST, PATCH and DELETE was seen to match an actual answer', () => {
    const writeOperations = /^(post|patch|delete) \/v1\/projects /;
    // A viewer's 403 is seen by roles-and-tokens.test.ts.
    const documented = checker.documented().filter((key) => writeOperations.test(key) && !key.endsWith(' 403'));
    expect(documented.length).toBeGreaterThanOrEqual(25);
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

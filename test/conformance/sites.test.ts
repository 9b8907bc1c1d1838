import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLogPageSchema, errorEnvelopeSchema, siteChangedSchema, siteListSchema } from '@perfwatch/common';
import type { MongoStore } from '@perfwatch/gateway';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import {
  errorsOf,
  expectRateLimited,
  expectTryAgain,
  newToken,
  ONE_A_MINUTE,
  resourceRequests,
  send,
  type Method,
  type Asking,
  type Params,
} from '../support/api-requests.ts';
import { isolatedNats, startTestGateway, testStore, type TestGateway } from '../support/test-services.ts';
import { breakableStore } from '../support/breakable-store.ts';

// Sites made, listed, changed and removed through the API (issue 34, item 1): /v1/sites as a
// client written from the spec sees it, every answer checked against /v1/openapi.json and every
// status its operations document seen. Tenancy as everywhere: another organisation's site is a
// 404. A real gateway over a real nats-server and MongoDB-wire server.

const SHOP = 'https://shop.example';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let alice: string;
let bob: string;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
/** Set: the store fails every site call (a database that breaks mid-request). */
let broken = false;

const siteRequests = resourceRequests({
  path: 'sites',
  key: 'id',
  checker: () => checker,
  base: () => gateway.url,
  token: () => alice,
});
const { call, create, patch, remove } = siteRequests;
const listOf = async (token?: string) => siteListSchema.parse((await siteRequests.list(token)).body);
const made = async (body: unknown, token = alice) => {
  const reply = await create(body, token);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return siteChangedSchema.parse(reply.body).site;
};

const SITE_CALLS = ['listSites', 'addSite', 'findSite', 'setSiteSettings', 'removeSite'];
const breakable = (store: MongoStore) => breakableStore(store, (method) => broken && SITE_CALLS.includes(method));

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url, store: breakable(await testStore()) });
  ({ token: alice } = await gateway.admin.createUser('site-alice'));
  ({ token: bob } = await gateway.admin.createUser('site-bob'));
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await nats?.dispose();
});

describe('POST /v1/sites', () => {
  it('creates a site by its origin, normalised, with its defaults; listed by origin with ISO dates', async () => {
    const shop = await made({ origin: 'https://Shop.example:443/', locations: ['london'] });
    expect(shop).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      origin: SHOP,
      sitemap: 'discover',
      include: [],
      exclude: [],
      maxPages: 100,
      sampleSize: 3,
      groupPatterns: [],
      devices: ['mobile', 'desktop'],
      locations: ['london'],
      defaultLocation: 'london',
      runs: 3,
      schedule: null,
      budgets: { budgets: {}, maxRegression: {} },
      groupBudgets: {},
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      // Discovered in the background from here on (shop.example does not answer).
      lastDiscovery: expect.objectContaining({ state: 'pending' }),
    });
    const blog = await made({
      origin: 'http://blog.example:8080',
      sitemap: 'http://blog.example:8080/sitemap_index.xml',
      include: ['/posts/**'],
      exclude: ['/posts/drafts/*'],
      maxPages: 1000,
      sampleSize: 20,
      groupPatterns: ['/posts/:slug'],
      devices: ['desktop'],
      locations: ['tokyo', 'london'],
      defaultLocation: 'tokyo',
      runs: 1,
      schedule: '0 3 * * *',
    });
    expect(blog).toMatchObject({ origin: 'http://blog.example:8080', devices: ['desktop'], maxPages: 1000 });
    expect((await listOf()).sites.map((s) => s.origin)).toEqual(['http://blog.example:8080', SHOP]);
    expect((await listOf(bob)).sites).toEqual([]);
  });

  it('409 CONFLICT for an origin the organisation has; another organisation may have it', async () => {
    const again = await create({ origin: 'https://shop.example/' });
    expect(again.status).toBe(409);
    expect(errorEnvelopeSchema.parse(again.body).status).toBe('CONFLICT');
    expect(errorsOf(again)).toBe(`origin: ${SHOP} exists`);
    const bobs = await made({ origin: SHOP }, bob);
    expect((await listOf(bob)).sites.map((s) => s.id)).toEqual([bobs.id]);
  });

  it('400 past MAX_SITES_PER_ORG sites, with the count and the limit; one removed makes room', async () => {
    const capped = await startTestGateway({ natsUrl: nats.url, config: { MAX_SITES_PER_ORG: 2 } });
    try {
      const { token } = await capped.admin.createUser('site-capped');
      const add = (origin: string) => send(capped.url, 'sites', 'POST', { body: { origin } }, { Authorization: token });
      const first = siteChangedSchema.parse((await add('https://cap-1.example')).body).site;
      expect((await add('https://cap-2.example')).status).toBe(200);
      const over = await add('https://cap-3.example');
      expect([over.status, errorEnvelopeSchema.parse(over.body).message]).toEqual([400, 'Too many sites.']);
      expect(errorsOf(over)).toMatch(/^origin: the organisation has 2 sites.*MAX_SITES_PER_ORG is 2/);
      await send(capped.url, 'sites', 'DELETE', { query: { id: first.id } }, { Authorization: token });
      expect((await add('https://cap-3.example')).status).toBe(200);
    } finally {
      await capped.stop();
    }
  });

  it('400 naming each bad field', async () => {
    const origin = 'https://refused.example';
    for (const [body, field] of [
      [
        { origin: 'https://refused.example/shop' },
        /^origin is a scheme, host and port alone.*give https:\/\/refused\.example$/m,
      ],
      [{ origin: 'https://refused.example/?q=1' }, /^origin is a scheme, host and port alone/m],
      [{ origin: 'ftp://refused.example' }, /^origin must be an absolute http\(s\) URL$/m],
      [{ origin: 'https://u:p@refused.example' }, /^origin must not carry credentials/m],
      [{ sampleSize: 2 }, /^origin is required$/m],
      [
        { origin, sitemap: 'https://elsewhere.example/sitemap.xml' },
        /^sitemap: the sitemap .* is not on the site's origin/m,
      ],
      [{ origin, sitemap: 'sitemap.xml' }, /^sitemap must be "discover" or an absolute http\(s\) URL$/m],
      [{ origin, maxPages: 1001 }, /^maxPages is a whole number from 1 to 1000$/m],
      [{ origin, maxPages: 0 }, /^maxPages is a whole number from 1 to 1000$/m],
      [{ origin, sampleSize: 21 }, /^sampleSize is a whole number from 1 to 20$/m],
      [{ origin, sampleSize: 2.5 }, /^sampleSize is a whole number from 1 to 20$/m],
      [{ origin, include: ['blog/*'] }, /^include\.0: a path pattern starts with \//m],
      [{ origin, include: ['/blog/(unclosed'] }, /^include\.0: a path pattern is a URLPattern pathname/m],
      [{ origin, exclude: '/admin' }, /^exclude must be an array of path patterns$/m],
      [{ origin, groupPatterns: [7] }, /^groupPatterns\.0: a path pattern is a string$/m],
      [{ origin, runs: 12 }, /^runs: runs is a whole number from 1 to 9$/m],
      [{ origin, locations: ['london'], defaultLocation: 'tokyo' }, /^defaultLocation: the default location tokyo/m],
      [{ origin, schedule: 'every day' }, /^schedule: not a cron expression: every day/m],
      [{ origin, devices: ['tablet'] }, /^devices\.0: devices must be one of mobile, desktop/m],
      [{ origin, crux: false }, /^unknown parameter\(s\): crux$/m],
    ] as const) {
      const reply = await create(body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(errorsOf(reply)).toMatch(field);
    }
    // Every bad field of one request is named.
    const many = errorsOf(await create({ origin, maxPages: -1, sampleSize: 'x', include: [''] }));
    expect(many.split('\n')).toHaveLength(3);
    expect((await listOf()).sites.map((s) => s.origin)).not.toContain(origin);
  });
});

describe('PATCH /v1/sites', () => {
  it('changes the settings given and keeps the others; the default location follows the locations', async () => {
    const shop = (await listOf()).sites.find((s) => s.origin === SHOP)!;
    const changed = await patch({ id: shop.id, locations: ['tokyo'], exclude: ['/cart'], sitemap: `${SHOP}/map.xml` });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body).toEqual({
      site: { ...shop, locations: ['tokyo'], defaultLocation: 'tokyo', exclude: ['/cart'], sitemap: `${SHOP}/map.xml` },
      created: false,
    });
    expect((await listOf()).sites.find((s) => s.id === shop.id)).toEqual(siteChangedSchema.parse(changed.body).site);
  });

  it('400 naming the field; 404 for another organisation’s site and for none', async () => {
    const shop = (await listOf()).sites.find((s) => s.origin === SHOP)!;
    for (const [body, field] of [
      [{ id: shop.id }, /^give at least one of sitemap, include, exclude, maxPages/],
      [{ id: shop.id, origin: 'https://moved.example' }, /^unknown parameter\(s\): origin$/m],
      [{ id: shop.id, sitemap: 'https://moved.example/sitemap.xml' }, /^sitemap: .* not on the site's origin/m],
      [{ id: shop.id, sampleSize: 0 }, /^sampleSize is a whole number from 1 to 20$/m],
      [{ id: 'shop', runs: 2 }, /^id must be a site id \(24 hexadecimal digits\)$/m],
      [{ runs: 2 }, /^id is required$/m],
    ] as const) {
      const reply = await patch(body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(errorsOf(reply)).toMatch(field);
    }
    const bobs = (await listOf(bob)).sites[0]!;
    for (const [id, token] of [
      [bobs.id, alice],
      [shop.id, bob],
      ['0123456789abcdef01234567', alice],
    ] as const) {
      const reply = await patch({ id, runs: 2 }, token);
      expect(reply.status).toBe(404);
      expect(errorsOf(reply)).toContain(id);
    }
    expect((await listOf(bob)).sites[0]).toEqual(bobs);
  });
});

describe('PATCH /v1/sites: budgets', () => {
  it("sets the site's budgets and its groups', each replaced whole, shown in the site view", async () => {
    const shop = (await listOf()).sites.find((s) => s.origin === SHOP)!;
    const budgets = { budgets: { lcp: 4000, performance: 50 }, maxRegression: { tbt: 20 } };
    const groupBudgets = { '/product/:id': { budgets: { lcp: 2500 }, maxRegression: {} } };
    const set = await patch({ id: shop.id, budgets, groupBudgets });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(siteChangedSchema.parse(set.body).site).toEqual({ ...shop, budgets, groupBudgets });
    // A budgets object without maxRegression has none; a group left out has no budgets any more.
    const blog = { '/blog/:slug': { budgets: { cls: 0.1 }, maxRegression: {} } };
    const again = await patch({ id: shop.id, budgets: { budgets: { lcp: 3000 } }, groupBudgets: blog });
    const site = siteChangedSchema.parse(again.body).site;
    expect(site).toMatchObject({ budgets: { budgets: { lcp: 3000 }, maxRegression: {} }, groupBudgets: blog });
    expect((await listOf()).sites.find((s) => s.id === shop.id)).toEqual(site);
    const cleared = await patch({ id: shop.id, budgets: {}, groupBudgets: {} });
    expect(siteChangedSchema.parse(cleared.body).site).toEqual({
      ...site,
      budgets: { budgets: {}, maxRegression: {} },
      groupBudgets: {},
    });
  });

  it('400 naming the bad budget, its key or its group template; nothing changed', async () => {
    const shop = (await listOf()).sites.find((s) => s.origin === SHOP)!;
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`/g${i}/:id`, {}]));
    for (const [body, field] of [
      [{ budgets: { budgets: { lcpx: 1 } } }, /^budgets: unknown budget key "lcpx"; known: performance/m],
      [{ budgets: { budgets: { performance: 101 } } }, /^budgets: performance is a score from 0 to 100/m],
      [{ budgets: { budgets: { lcp: -1 } } }, /^budgets\.budgets\.lcp: budgets: a limit is not negative$/m],
      [{ budgets: { lcp: 2500 } }, /^unknown parameter\(s\): lcp$/m],
      [
        { groupBudgets: { '/product/:id': { maxRegression: { tbt: 'x' } } } },
        /^groupBudgets\.\/product\/:id\.maxRegression\.tbt: maxRegression: each limit is a number$/m,
      ],
      [
        { groupBudgets: { product: {} } },
        /^groupBudgets\.product: a group template is a path pattern \(\/product\/:id\)/m,
      ],
      [{ groupBudgets: { '/product/:id': 5 } }, /^groupBudgets\.\/product\/:id: .*expected object/m],
      [{ groupBudgets: [] }, /^groupBudgets must be an object of budgets by group template$/m],
      [{ groupBudgets: many }, /^groupBudgets has more than 50 groups$/m],
    ] as const) {
      const reply = await patch({ id: shop.id, ...body });
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(errorEnvelopeSchema.parse(reply.body).status).toBe('BAD_REQUEST');
      expect(errorsOf(reply), JSON.stringify(body)).toMatch(field);
    }
    expect((await listOf()).sites.find((s) => s.id === shop.id)).toEqual(shop);
  });
});

describe('DELETE /v1/sites', () => {
  it('removes a site; 404 for another organisation’s, for none, and the second time; its origin is free again', async () => {
    const gone = await made({ origin: 'https://gone.example' });
    expect((await remove(gone.id, bob)).status).toBe(404);
    expect(await remove(gone.id)).toMatchObject({ status: 200, body: { id: gone.id, removed: true } });
    expect((await remove(gone.id)).status).toBe(404);
    expect((await listOf()).sites.map((s) => s.id)).not.toContain(gone.id);
    await made({ origin: 'https://gone.example' });
    expect(errorsOf(await call('DELETE', { query: {} }))).toMatch(/^id is required$/m);
    expect(errorsOf(await call('DELETE', { query: { id: gone.id, runs: '2' } }))).toMatch(
      /unknown parameter\(s\): runs/,
    );
  });

  it('records each change in the audit log, with the site’s origin', async () => {
    const log = auditLogPageSchema.parse(
      (await send(gateway.url, 'audit-log', 'GET', { query: {} }, { Authorization: alice })).body,
    );
    const sites = log.entries.filter((e) => e.action.startsWith('site.')).map((e) => [e.action, e.target]);
    expect(sites.reverse()).toEqual([
      ['site.created', SHOP],
      ['site.created', 'http://blog.example:8080'],
      ['site.changed', SHOP],
      // Its budgets set, changed and cleared.
      ['site.changed', SHOP],
      ['site.changed', SHOP],
      ['site.changed', SHOP],
      ['site.created', 'https://gone.example'],
      ['site.removed', 'https://gone.example'],
      ['site.created', 'https://gone.example'],
    ]);
  });
});

describe('/v1/sites: who may', () => {
  it('a read token lists the sites (200) and is refused every write (403 naming the role)', async () => {
    const reader = await newToken(gateway.url, alice, { scope: 'read' });
    expect((await listOf(reader)).sites).toEqual((await listOf()).sites);
    const shop = (await listOf()).sites.find((s) => s.origin === SHOP)!;
    for (const [method, params] of [
      ['POST', { body: { origin: 'https://viewer.example' } }],
      ['PATCH', { body: { id: shop.id, runs: 1 } }],
      ['DELETE', { query: { id: shop.id } }],
    ] as const) {
      const reply = await call(method, params, { Authorization: reader });
      expect([reply.status, errorsOf(reply)]).toEqual([
        403,
        'changing this needs the editor role; this token has viewer',
      ]);
    }
    expect((await listOf()).sites.find((s) => s.id === shop.id)).toEqual(shop);
  });

  it('a ci token lists only the sites of the projects it names', async () => {
    await gateway.admin.addProject('site-alice', `${SHOP}/product/1`, { locations: ['london'] });
    const ci = await newToken(gateway.url, alice, { scope: 'ci', projects: [`${SHOP}/product/1`] });
    const [seen] = (await listOf(ci)).sites;
    const whole = (await listOf()).sites.find((s) => s.origin === SHOP)!;
    // What tells of the site's other pages is not shown to it: their path patterns, groups' budgets, discovery counts.
    const { include, exclude, groupPatterns, groupBudgets, lastDiscovery, ...measuring } = whole;
    expect([include, exclude, groupPatterns, groupBudgets, lastDiscovery]).not.toContain(undefined);
    expect(seen).toEqual(measuring);
    expect((await listOf(ci)).sites).toHaveLength(1);
    expect((await create({ origin: 'https://ci.example' }, ci)).status).toBe(403);
  });
});

describe('/v1/sites: the statuses every write shares', () => {
  const writes = (): [Method, { query?: Params; body?: unknown }][] => [
    ['POST', { body: { origin: 'https://shared.example' } }],
    ['PATCH', { body: { id: '0123456789abcdef01234567', runs: 1 } }],
    ['DELETE', { query: { id: '0123456789abcdef01234567' } }],
  ];

  it('400 without a token, 401 with a bad one, 406 when JSON is refused, 405 for PUT', async () => {
    for (const [method, params] of [...writes(), ['GET', {}] as const]) {
      expect(errorsOf(await call(method, params, {}))).toMatch(/Authorization/);
      expect((await call(method, params, { Authorization: 'pw_nope' })).status).toBe(401);
      expect((await call(method, params, { Authorization: alice, Accept: 'text/html' })).status).toBe(406);
    }
    const put = await fetch(`${gateway.url}/v1/sites`, { method: 'PUT', headers: { Authorization: alice } });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, PATCH, DELETE');
    expect(errorsOf(await call('GET', { query: { origin: SHOP } }))).toMatch(/unknown parameter\(s\): origin/);
  });

  it('413 and 415 for a body it will not read', async () => {
    for (const method of ['POST', 'PATCH'] as const) {
      const big = await call(method, { raw: JSON.stringify({ origin: SHOP, pad: 'x'.repeat(200_000) }) });
      expect(big.status).toBe(413);
      const form = await call(method, { raw: 'origin=x', contentType: 'application/x-www-form-urlencoded' });
      expect(form.status).toBe(415);
    }
  });

  it('429 with Retry-After past the per-minute limit', async () => {
    const list = (at: Asking) => call('GET', {}, at.headers, { base: at.base });
    await expectRateLimited(
      () => startTestGateway({ natsUrl: nats.url, rateLimits: ONE_A_MINUTE }),
      'busy',
      { request: list, status: 200 },
      [
        ...writes().map(
          ([method, params]) =>
            (at: Asking) =>
              call(method, params, at.headers, { base: at.base }),
        ),
        list,
      ],
    );
  });

  it('500 asks to try again and leaks nothing when the database fails', async () => {
    const requests = [...writes(), ['GET', {}] as const].map(
      ([method, params]) =>
        () =>
          call(method, params),
    );
    await expectTryAgain((on) => (broken = on), requests);
  });

  it('every status documented for /v1/sites was seen to match an actual answer', () => {
    // Every member reads (a viewer is the least role) and a ci token may too: no GET is a 403.
    const documented = checker.documented().filter((key) => / \/v1\/sites /.test(key) && key !== 'get /v1/sites 403');
    // 7 statuses every operation has; 413, 415 for a body; 409 (POST), 404 (PATCH, DELETE).
    expect(documented.length).toBe(34);
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

import { request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorEnvelopeSchema } from '@perfwatch/common';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Random and hostile input to every endpoint, in GET and POST form: wrong types, huge values,
// repeated keys, broken JSON, broken percent-encoding and broken UTF-8. Whatever comes in, the
// answer is never a 500, an error is always the API's envelope, and nothing leaks a stack.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let token: string;
const SHOP = 'https://fuzz-shop.example/';
const ID = '6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    replyTimeoutMs: 500,
    rateLimits: { updates: 1_000_000, reads: 1_000_000 },
  });
  ({ token } = await gateway.admin.createUser('fuzz'));
  await gateway.admin.addProject('fuzz', SHOP, { locations: ['london', 'tokyo'], runs: 1 });
});

afterAll(async () => {
  await gateway?.stop();
  await nats?.dispose();
});

interface Reply {
  status: number;
  contentType: string;
  text: string;
}

/** A raw HTTP request: the path and body go out byte for byte, as no well-behaved client would send them. */
function send(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: Buffer,
  contentType = 'application/json',
): Promise<Reply> {
  const { hostname, port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        method,
        path,
        headers: {
          Authorization: token,
          ...(body ? { 'Content-Type': contentType, 'Content-Length': body.length } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const ENDPOINTS = [
  'update',
  'audit',
  'compare',
  'updates',
  'overview',
  `updates/${ID}`,
  'updates/%ZZ',
  'updates/x',
  'budgets',
  'webhooks',
  'annotations',
  'credentials',
  'projects',
  'tokens',
  'members',
  'sites',
  'sites/0123456789abcdef01234567/overview',
  'sites/x/overview',
  'sites/0123456789abcdef01234567/update',
  'sites/x/update',
] as const;
const KEYS = [
  'url',
  'device',
  'location',
  'locations',
  'date',
  'mode',
  'updateType',
  'startDate',
  'endDate',
  'dateRange',
  'domain',
  'section',
  'sections',
  'id',
  'pad',
  'budget',
  'budgets',
  'maxRegression',
  'targetUrl',
  'project',
  'format',
  'remove',
  'text',
  'link',
  'from',
  'to',
  'auth',
  'clear',
  'runs',
  'schedule',
  'defaultLocation',
  'scope',
  'projects',
  'expires',
  'label',
  'prefix',
  'user',
  'pages',
  'all',
  'planOnly',
  'role',
  'origin',
  'sitemap',
  'include',
  'exclude',
  'maxPages',
  'sampleSize',
  'groupPatterns',
];

const value = fc.oneof(
  fc.constantFrom(
    SHOP,
    'mobile',
    'desktop',
    'tokyo',
    'london',
    'async',
    'sync',
    'ci',
    'manual',
    '2026-11-22',
    '2026-11-22T10:00:00',
    'LIGHTHOUSE',
    'crux',
    'read',
    'admin',
    'viewer',
    '90d',
    '',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ minLength: 3_000, maxLength: 6_000 }),
  fc.integer().map(String),
  fc.double().map(String),
);
const pairs = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 12 })), value), {
  maxLength: 8,
});

/** Percent-encodes, or with some luck leaves broken escapes and bytes that are not UTF-8. */
const encode = (text: string, broken: boolean) =>
  broken
    ? text.replace(/[^A-Za-z0-9]/g, (c) =>
        c === '%' ? '%ZZ' : `%${(c.charCodeAt(0) & 0xff).toString(16).padStart(2, '0').toUpperCase()}`,
      )
    : encodeURIComponent(text);

const jsonValue = fc.jsonValue({ maxDepth: 3 });
const body = fc.oneof(
  pairs.map((p) => Buffer.from(JSON.stringify(Object.fromEntries(p)))),
  fc.dictionary(fc.constantFrom(...KEYS), jsonValue).map((o) => Buffer.from(JSON.stringify(o))),
  jsonValue.map((v) => Buffer.from(JSON.stringify(v))),
  fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
);

function assertWellFormed(endpoint: string, reply: Reply): void {
  const context = `${endpoint} → ${reply.status} ${reply.text.slice(0, 300)}`;
  expect(reply.status, context).not.toBe(500);
  expect(reply.status, context).toBeLessThan(600);
  // A sync update that happens to be valid reaches the (absent) agents: 503/504 are its documented answers.
  if (reply.status >= 500) expect(endpoint === 'update' && [503, 504].includes(reply.status), context).toBe(true);
  expect(reply.contentType, context).toMatch(/application\/json/);
  if (reply.status >= 400) {
    const envelope = errorEnvelopeSchema.safeParse(JSON.parse(reply.text));
    expect(envelope.success, context).toBe(true);
  }
  expect(reply.text, context).not.toMatch(/\.ts:\d+|\bat [\w.<>]+ \(|node:internal/);
}

describe('hostile input never breaks the API', () => {
  it('GET with random, repeated, huge and badly encoded parameters', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), pairs, fc.boolean(), async (endpoint, params, broken) => {
        const query = params.map(([k, v]) => `${encode(k, broken)}=${encode(v, broken)}`).join('&');
        assertWellFormed(endpoint, await send('GET', `/v1/${endpoint}${query ? `?${query}` : ''}`));
      }),
      { numRuns: 1_000 },
    );
  }, 120_000);

  it('POST with random JSON, wrong types, broken JSON and bytes that are not UTF-8', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        body,
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'application/json; charset=latin1',
          'text/plain',
        ),
        async (endpoint, payload, contentType) => {
          assertWellFormed(endpoint, await send('POST', `/v1/${endpoint}`, payload, contentType));
        },
      ),
      { numRuns: 1_000 },
    );
  }, 120_000);

  it('PATCH and DELETE of /v1/projects with random bodies and parameters (issue 33)', async () => {
    await fc.assert(
      fc.asyncProperty(body, pairs, fc.boolean(), async (payload, params, broken) => {
        assertWellFormed('projects', await send('PATCH', '/v1/projects', payload));
        const query = params.map(([k, v]) => `${encode(k, broken)}=${encode(v, broken)}`).join('&');
        assertWellFormed('projects', await send('DELETE', `/v1/projects${query ? `?${query}` : ''}`));
      }),
      { numRuns: 400 },
    );
  }, 120_000);

  it('POST, PATCH and DELETE of /v1/sites with random bodies, parameters and site fields (issue 34)', async () => {
    const field = fc.option(fc.oneof(value, jsonValue), { nil: undefined });
    const siteBody = fc.record(
      {
        origin: fc.oneof(
          fc.constantFrom(SHOP, 'https://fuzz-site.example', 'http://[::1]:8080', 'https://a.example/x'),
          value,
        ),
        sitemap: fc.oneof(fc.constantFrom('discover', `${SHOP}sitemap.xml`, 'https://elsewhere.example/s.xml'), field),
        include: fc.oneof(fc.array(fc.oneof(fc.constant('/blog/*'), value), { maxLength: 3 }), field),
        maxPages: fc.oneof(fc.integer(), field),
        sampleSize: fc.oneof(fc.integer({ min: -5, max: 30 }), field),
        schedule: field,
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(body, pairs, fc.boolean(), siteBody, async (payload, params, broken, site) => {
        assertWellFormed('sites', await send('POST', '/v1/sites', Buffer.from(JSON.stringify(site))));
        assertWellFormed('sites', await send('PATCH', '/v1/sites', payload));
        const query = params.map(([k, v]) => `${encode(k, broken)}=${encode(v, broken)}`).join('&');
        assertWellFormed('sites', await send('DELETE', `/v1/sites${query ? `?${query}` : ''}`));
      }),
      { numRuns: 300 },
    );
  }, 120_000);

  it("PATCH of a site's budgets and group budgets with random limits, keys and templates (issue 34)", async () => {
    const made = await send(
      'POST',
      '/v1/sites',
      Buffer.from(JSON.stringify({ origin: 'https://fuzz-budgets.example' })),
    );
    const { id } = (JSON.parse(made.text) as { site: { id: string } }).site;
    const field = fc.option(fc.oneof(value, jsonValue), { nil: undefined });
    const limits = fc.oneof(
      fc.dictionary(
        fc.oneof(fc.constantFrom('lcp', 'performance', 'cls', '__proto__', 'constructor'), fc.string()),
        fc.oneof(fc.double(), fc.integer(), jsonValue),
        { maxKeys: 4 },
      ),
      field,
    );
    const budgets = fc.oneof(fc.record({ budgets: limits, maxRegression: limits }, { requiredKeys: [] }), field);
    const template = fc.oneof(fc.constantFrom('/product/:id', '/docs/:p.html', '/(unclosed', '__proto__'), fc.string());
    const groupBudgets = fc.oneof(fc.dictionary(template, budgets, { maxKeys: 4 }), field);
    await fc.assert(
      fc.asyncProperty(budgets, groupBudgets, async (own, groups) => {
        const patch = { id, budgets: own, groupBudgets: groups };
        assertWellFormed('sites', await send('PATCH', '/v1/sites', Buffer.from(JSON.stringify(patch))));
      }),
      { numRuns: 300 },
    );
    // Whatever was stored reads back.
    assertWellFormed('sites', await send('GET', '/v1/sites'));
    expect((await send('GET', '/v1/sites')).status).toBe(200);
  }, 120_000);

  it('POST /v1/tokens and PUT /v1/members with the right fields holding random values (issue 33)', async () => {
    const field = fc.option(fc.oneof(value, jsonValue), { nil: undefined });
    const tokenBody = fc.record(
      {
        scope: fc.oneof(fc.constantFrom('read', 'ci', 'editor', 'admin'), value),
        projects: fc.oneof(fc.array(fc.oneof(fc.constant(SHOP), value), { maxLength: 3 }), field),
        expires: fc.oneof(fc.constantFrom('90d', '1y', '2099-01-01', '0d', '1e400d', '99999999y'), field),
        label: field,
      },
      { requiredKeys: [] },
    );
    const memberBody = fc.record({ user: fc.oneof(value, jsonValue), role: fc.oneof(value, jsonValue) });
    await fc.assert(
      fc.asyncProperty(tokenBody, memberBody, async (token, member) => {
        assertWellFormed('tokens', await send('POST', '/v1/tokens', Buffer.from(JSON.stringify(token))));
        assertWellFormed('members', await send('PUT', '/v1/members', Buffer.from(JSON.stringify(member))));
      }),
      { numRuns: 300 },
    );
  }, 120_000);

  it('PUT and DELETE of /v1/members and DELETE of /v1/tokens with random bodies and parameters (issue 33)', async () => {
    await fc.assert(
      fc.asyncProperty(body, pairs, fc.boolean(), async (payload, params, broken) => {
        assertWellFormed('members', await send('PUT', '/v1/members', payload));
        const query = params.map(([k, v]) => `${encode(k, broken)}=${encode(v, broken)}`).join('&');
        for (const endpoint of ['members', 'tokens'])
          assertWellFormed(endpoint, await send('DELETE', `/v1/${endpoint}${query ? `?${query}` : ''}`));
      }),
      { numRuns: 300 },
    );
  }, 120_000);

  it("a request line and headers over Node's 16 kB limit get the envelope too (found by the GET property)", async () => {
    const reply = await send('GET', `/v1/update?url=${'%20'.repeat(6_000)}`);
    expect(reply.status).toBe(400);
    expect(errorEnvelopeSchema.parse(JSON.parse(reply.text)).errors.join(' ')).toMatch(/larger than 16 kB/);
  });
});

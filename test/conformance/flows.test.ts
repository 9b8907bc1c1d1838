import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flowViewSchema } from '@perfwatch/common';
import type { MongoStore } from '@perfwatch/gateway';
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
import { isolatedNats, startTestGateway, testStore, type TestGateway } from '../support/test-services.ts';

// A project's user flow (issue 36) as a client written from the spec uses it: GET, PUT and DELETE
// of /v1/projects/flow on a real gateway, real nats-server and MongoDB-wire server; tenancy and
// roles as the project's other settings; every refusal in the error envelope naming the step;
// every answer checked against /v1/openapi.json.

const SHOP = 'https://shop.example/';
const OTHER = 'https://other.example/';
const FLOW = {
  steps: [
    { kind: 'navigate', name: 'product' },
    {
      kind: 'timespan',
      name: 'add to cart',
      actions: [
        { action: 'select', selector: '#size', value: 'l' },
        { action: 'click', text: 'Add to cart' },
        { action: 'waitFor', selector: '#cart li', timeoutMs: 5000 },
      ],
    },
    { kind: 'snapshot', name: 'cart' },
  ],
};
const path = 'projects/flow';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let store: MongoStore;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
let broken = new Set<string>();
let alice: string;
let bob: string;

beforeAll(async () => {
  nats = await isolatedNats();
  const real = await testStore();
  store = breakableStore(real, (method) => broken.has(method));
  gateway = await startTestGateway({ natsUrl: nats.url, store, config: { PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8' } });
  ({ token: alice } = await gateway.admin.createUser('alice'));
  ({ token: bob } = await gateway.admin.createUser('bob'));
  await gateway.admin.addProject('alice', SHOP, { locations: ['london'] });
  await gateway.admin.addProject('alice', OTHER, { locations: ['london'] });
  await gateway.admin.addProject('bob', SHOP, { locations: ['london'] });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
});

afterAll(async () => {
  await gateway?.stop();
  await store?.close();
  await nats?.dispose();
});

async function call(
  method: 'GET' | 'PUT' | 'DELETE',
  params: { query?: Params; body?: unknown; raw?: string; contentType?: string },
  headers: Record<string, string> = { Authorization: alice },
  base = gateway.url,
): Promise<Reply> {
  return documentedBy(checker, path, method, await send(base, path, method, params, headers));
}

describe('/v1/projects/flow', () => {
  it("sets a project's flow by PUT, reads it by GET, removes it by DELETE; another's project is a missing one", async () => {
    expect((await call('GET', { query: { url: SHOP } })).body).toEqual({ url: SHOP, flow: null });
    const put = await call('PUT', { body: { url: SHOP, flow: FLOW } });
    expect(put.status).toBe(200);
    expect(flowViewSchema.parse(put.body)).toEqual({ url: SHOP, flow: FLOW });
    expect((await call('GET', { query: { url: SHOP } })).body).toEqual(put.body);
    // Bob's project at the same URL is his own, without a flow; Alice's other project has none either.
    expect((await call('GET', { query: { url: SHOP } }, { Authorization: bob })).body).toEqual({
      url: SHOP,
      flow: null,
    });
    expect((await call('GET', { query: { url: OTHER } })).body).toEqual({ url: OTHER, flow: null });
    expect((await call('PUT', { body: { url: 'https://nope.example/', flow: FLOW } })).status).toBe(404);
    expect((await call('DELETE', { query: { url: SHOP } })).body).toEqual({ url: SHOP, removed: true });
    expect((await call('DELETE', { query: { url: SHOP } })).status).toBe(404);
    expect((await call('GET', { query: { url: SHOP } })).body).toEqual({ url: SHOP, flow: null });
  });

  it('refuses a bad flow with 400 naming the step, and keeps the one it had', async () => {
    await call('PUT', { body: { url: SHOP, flow: FLOW } });
    const timespan = (action: unknown) => ({
      url: SHOP,
      flow: { steps: [FLOW.steps[0], { kind: 'timespan', name: 'add to cart', actions: [action] }] },
    });
    for (const [body, error] of [
      [timespan({ action: 'hover', text: 'Add to cart' }), /step 2 "add to cart": action 1: unknown action "hover"/],
      [
        timespan({ action: 'click', selector: 'x'.repeat(301) }),
        /step 2 "add to cart": action 1: a selector is at most 300/,
      ],
      [timespan({ action: 'click' }), /step 2 "add to cart": action 1 \(click\): needs a selector or a text/],
      [
        { url: SHOP, flow: { steps: Array.from({ length: 11 }, (_, i) => ({ kind: 'snapshot', name: `s${i}` })) } },
        /at most 10 steps/,
      ],
      [
        { url: SHOP, flow: { steps: [{ kind: 'snapshot', name: 'first' }] } },
        /step 1 "first": a flow starts with a navigate step/,
      ],
      [
        {
          url: SHOP,
          flow: { steps: [FLOW.steps[0], { kind: 'navigate', name: 'meta', url: 'http://169.254.169.254/' }] },
        },
        /steps\.1\.url: step 2 "meta": refused to reach 169\.254\.169\.254/,
      ],
      [{ url: SHOP }, /flow/],
      [{ url: SHOP, flow: FLOW, extra: 1 }, /extra/],
    ] as const) {
      const reply = await call('PUT', { body });
      expect(reply.status, JSON.stringify(body).slice(0, 120)).toBe(400);
      expect(errorsOf(reply)).toMatch(error);
    }
    expect((await call('GET', { query: { url: SHOP } })).body).toEqual({ url: SHOP, flow: FLOW });
    // A flow changes by PUT only: a GET with one is refused, and stores nothing.
    const get = await call('GET', { query: { url: SHOP, flow: '{}' } });
    expect(get.status).toBe(400);
  });

  // Every role's 403 is roles-and-tokens.test.ts's, as every endpoint's.
  it('a ci token reads the flow of its own projects only', async () => {
    const ci = await newToken(gateway.url, alice, { scope: 'ci', projects: [OTHER] });
    expect((await call('GET', { query: { url: OTHER } }, { Authorization: ci })).status).toBe(200);
    expect((await call('GET', { query: { url: SHOP } }, { Authorization: ci })).status).toBe(404);
  });

  it('401, 406 by every method, 413 and 415 by PUT, 500 without leaking the database', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      expect((await call(method, { query: { url: SHOP } }, { Authorization: 'pw_nope' })).status).toBe(401);
      expect((await call(method, { query: { url: SHOP } }, { Authorization: alice, Accept: 'text/html' })).status).toBe(
        406,
      );
      expect((await call(method, { query: {} })).status).toBe(400);
    }
    expect((await call('PUT', { body: { url: SHOP, flow: FLOW } }, { Authorization: 'pw_nope' })).status).toBe(401);
    expect(
      (await call('PUT', { body: { url: SHOP, flow: FLOW } }, { Authorization: alice, Accept: 'text/html' })).status,
    ).toBe(406);
    expect((await call('PUT', { raw: JSON.stringify({ url: SHOP, pad: 'x'.repeat(200_000) }) })).status).toBe(413);
    expect((await call('PUT', { raw: 'url=x', contentType: 'application/x-www-form-urlencoded' })).status).toBe(415);
    broken = new Set(['findProject']);
    try {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const params = method === 'PUT' ? { body: { url: SHOP, flow: FLOW } } : { query: { url: SHOP } };
        const failed = await call(method, params);
        expect(failed.status).toBe(500);
        expect(JSON.stringify(failed.body)).not.toMatch(/connection reset|db\.ts/);
      }
    } finally {
      broken = new Set();
    }
  });

  it('429 with Retry-After past the per-minute limit of reads, by every method', async () => {
    const limited = await startTestGateway({ natsUrl: nats.url, store, rateLimits: { updates: 1, reads: 1 } });
    try {
      expect((await send(limited.url, path, 'GET', { query: { url: SHOP } }, { Authorization: alice })).status).toBe(
        200,
      );
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const params = method === 'PUT' ? { body: { url: SHOP, flow: FLOW } } : { query: { url: SHOP } };
        const over = await send(limited.url, path, method, params, { Authorization: alice });
        expect(documentedBy(checker, path, method, over).status).toBe(429);
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    } finally {
      await limited.stop();
    }
  });

  it('every status documented for /v1/projects/flow was seen to match an actual answer (403: roles-and-tokens)', () => {
    const documented = checker.documented().filter((key) => / \/v1\/projects\/flow /.test(key) && !/ 403$/.test(key));
    expect(documented.length).toBeGreaterThanOrEqual(20);
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

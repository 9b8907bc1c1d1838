import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLogPageSchema, type AuditEntry } from '@perfwatch/common';
import { issueToken, type MongoStore } from '@perfwatch/gateway';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import { documented as documentedBy, errorsOf, send, type Params, type Reply } from '../support/api-requests.ts';
import { isolatedNats, startTestGateway, testStore, type TestGateway } from '../support/test-services.ts';
import { breakableStore } from '../support/breakable-store.ts';

// The audit log of an organisation (issue 33, item 5), as a client written from the spec reads
// it: every change the API makes is listed with its actor (the member's name, the token's
// prefix), the newest first, a page at a time by an opaque cursor; never another
// organisation's entry, never a secret. A real gateway on a real nats-server and
// MongoDB-wire server; every answer checked against /v1/openapi.json.

const SHOP = 'https://shop.example/';
const BOBS = 'https://bob.example/';
/** Values that must never be in the log: what was sent as secrets, and the tokens themselves. */
const COOKIE_VALUE = `cookie-${randomBytes(8).toString('hex')}`;
const HEADER_VALUE = `header-${randomBytes(8).toString('hex')}`;
const FORGE_TOKEN = `forge-${randomBytes(8).toString('hex')}`;
const FORGE_WEBHOOK_SECRET = `hook-${randomBytes(12).toString('hex')}`;
/** A Slack-like webhook URL: its path is its secret. */
const HOOK_PATH_SECRET = randomBytes(12).toString('hex');

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
let store: MongoStore;
/** The store's methods that fail while `broken` names them (a database that breaks mid-request). */
let broken = new Set<string>();
/** Alice: the admin of her own organisation; carol: an editor of it, with a token of hers there; bob: another organisation. */
const who = {} as Record<'alice' | 'bob' | 'carol', { token: string; prefix: string }>;
const secrets: string[] = [COOKIE_VALUE, HEADER_VALUE, FORGE_TOKEN, FORGE_WEBHOOK_SECRET, HOOK_PATH_SECRET];

async function call(
  path: string,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  params: { query?: Params; body?: unknown },
  token: string,
): Promise<Reply> {
  return documentedBy(checker, path, method, await send(gateway.url, path, method, params, { Authorization: token }));
}

/** A change through the API that must succeed. */
async function change(...args: Parameters<typeof call>): Promise<Reply> {
  const reply = await call(...args);
  expect(reply.status, `${args[1]} ${args[0]}: ${JSON.stringify(reply.body)}`).toBe(200);
  return reply;
}

/** A page of the log, by GET (a query) or POST (a body). */
async function page(params: Params, { token = who.alice.token, method = 'GET' as 'GET' | 'POST' } = {}) {
  const reply = await call('audit-log', method, method === 'GET' ? { query: params } : { body: params }, token);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return auditLogPageSchema.parse(reply.body);
}

/** Every entry of the log, page by page of `limit`, following `next`. */
async function everyEntry(limit: number, method: 'GET' | 'POST' = 'GET', token = who.alice.token) {
  const entries: AuditEntry[] = [];
  let before: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const got = await page({ limit: String(limit), ...(before ? { before } : {}) }, { token, method });
    expect(got.entries.length).toBeLessThanOrEqual(limit);
    entries.push(...got.entries);
    if (got.next === undefined) return entries;
    before = got.next;
  }
  throw new Error('the log never ended');
}

/** The test's store, failing the methods `broken` names. */
const breakable = (real: MongoStore) => breakableStore(real, (method) => broken.has(method));

beforeAll(async () => {
  nats = await isolatedNats();
  store = await testStore();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    store: breakable(store),
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      PERFWATCH_TRUSTED_LOCATIONS: ['london'],
    },
  });
  for (const name of ['alice', 'bob', 'carol'] as const) {
    const { token, prefix } = await gateway.admin.createUser(name);
    who[name] = { token, prefix };
  }
  // Carol works in alice's organisation as an editor, with a token of that organisation.
  const alice = (await gateway.store.findUserByName('alice'))!;
  const carol = (await gateway.store.findUserByName('carol'))!;
  await gateway.store.setMembership({ orgId: alice.id, userId: carol.id, role: 'editor', source: 'manual' });
  const issued = issueToken();
  await gateway.store.addToken({ ...issued, userId: carol.id, orgId: alice.id, scope: 'editor' });
  who.carol = { token: issued.token, prefix: issued.prefix };
  secrets.push(...Object.values(who).map((w) => w.token));
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await store?.close();
  await nats?.dispose();
});

describe('/v1/audit-log', () => {
  it('is empty before any change, and answers no-store', async () => {
    const reply = await call('audit-log', 'GET', { query: {} }, who.alice.token);
    expect(reply.body).toEqual({ entries: [] });
    expect(reply.headers.get('cache-control')).toBe('no-store');
  });

  it('lists each change with its actor, the newest first, and never a secret', async () => {
    const { alice, carol } = { alice: who.alice.token, carol: who.carol.token };
    await change('projects', 'POST', { body: { url: SHOP, locations: ['london'], runs: 1 } }, alice);
    await change('projects', 'PATCH', { body: { url: SHOP, runs: 2, schedule: '0 3 * * *' } }, carol);
    await change('budgets', 'POST', { body: { url: SHOP, budgets: { performance: 90 } } }, carol);
    const auth = { cookies: [{ name: 'session', value: COOKIE_VALUE }], headers: { 'X-Api-Key': HEADER_VALUE } };
    await change('credentials', 'POST', { body: { url: SHOP, auth } }, alice);
    await change('credentials', 'POST', { body: { url: SHOP, clear: true } }, alice);
    const hook = await change(
      'webhooks',
      'POST',
      { body: { targetUrl: `http://127.0.0.1:9/services/${HOOK_PATH_SECRET}`, project: SHOP, format: 'slack' } },
      carol,
    );
    const created = (hook.body as { created: { id: string; secret: string } }).created;
    secrets.push(created.secret);
    const note = await change('annotations', 'POST', { body: { url: SHOP, text: 'deploy 41' } }, carol);
    const noteId = (note.body as { added: { id: string } }).added.id;
    await change('annotations', 'POST', { body: { url: SHOP, remove: noteId } }, carol);
    const link = {
      url: SHOP,
      forge: 'gitea',
      repository: 'acme/shop',
      apiUrl: 'https://gitea.example/api/v1',
      token: FORGE_TOKEN,
      webhookSecret: FORGE_WEBHOOK_SECRET,
      previewUrl: 'https://pr-{pullRequest}.preview.example',
    };
    await change('projects/repository', 'PUT', { body: link }, alice);
    await change('projects/repository', 'DELETE', { query: { url: SHOP } }, alice);
    await change('webhooks', 'POST', { body: { remove: created.id } }, carol);
    await change('projects', 'DELETE', { query: { url: SHOP } }, alice);

    const log = await page({ limit: '200' });
    const A = { userId: expect.any(String), name: 'alice', via: 'token', tokenPrefix: who.alice.prefix };
    const C = { userId: expect.any(String), name: 'carol', via: 'token', tokenPrefix: who.carol.prefix };
    expect(log.entries.map((e) => [e.action, e.target, e.actor])).toEqual([
      ['project.removed', SHOP, A],
      ['webhook.removed', created.id, C],
      ['repository.unlinked', SHOP, A],
      ['repository.linked', SHOP, A],
      ['annotation.removed', SHOP, C],
      ['annotation.added', SHOP, C],
      ['webhook.added', created.id, C],
      ['credentials.cleared', SHOP, A],
      ['credentials.set', SHOP, A],
      ['budgets.replaced', SHOP, C],
      ['project.changed', SHOP, C],
      ['project.created', SHOP, A],
    ]);
    const at = log.entries.map((e) => Date.parse(e.at));
    expect(at).toEqual([...at].sort((a, b) => b - a));
    expect(Math.abs(at[0]! - Date.now())).toBeLessThan(60_000);
    const details = Object.fromEntries(log.entries.map((e) => [e.action, e.details]));
    expect(details['project.changed']).toEqual({ runs: 2, schedule: '0 3 * * *' });
    expect(details['credentials.set']).toEqual({ cookies: 1, headers: 1, loginSteps: 0 });
    expect(details['webhook.added']).toEqual({ host: '127.0.0.1:9', project: SHOP, format: 'slack' });
    expect(details['repository.linked']).toMatchObject({ forge: 'gitea', repository: 'acme/shop' });
    expect(details['annotation.removed']).toEqual({ id: noteId });
    // Not the values sent as secrets, not the webhook's signing secret, no token: only prefixes.
    const text = JSON.stringify(log);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });

  it('records nothing for a change refused or failed', async () => {
    const before = (await everyEntry(200)).length;
    const taken = 'https://taken.example/';
    await change('projects', 'POST', { body: { url: taken, locations: ['london'] } }, who.alice.token);
    expect((await call('projects', 'POST', { body: { url: taken } }, who.alice.token)).status).toBe(409);
    const absent = { url: 'https://absent.example/' };
    expect((await call('projects', 'DELETE', { query: absent }, who.alice.token)).status).toBe(404);
    expect((await call('projects', 'PATCH', { body: { ...absent, runs: 2 } }, who.alice.token)).status).toBe(404);
    const bad = await call('projects', 'PATCH', { body: { url: taken, runs: 999 } }, who.alice.token);
    expect(bad.status).toBe(400);
    const noHook = { remove: '0'.repeat(24) };
    expect((await call('webhooks', 'POST', { body: noHook }, who.alice.token)).status).toBe(404);
    // Credentials for a location whose agents the gateway does not trust: refused, not kept.
    await change('projects', 'PATCH', { body: { url: taken, locations: ['tokyo'] } }, who.alice.token);
    const auth = { cookies: [{ name: 's', value: COOKIE_VALUE }] };
    expect((await call('credentials', 'POST', { body: { url: taken, auth } }, who.alice.token)).status).toBe(400);
    const after = await everyEntry(200);
    expect(after.length).toBe(before + 2);
    expect(after.slice(0, 2).map((e) => [e.action, e.details])).toEqual([
      ['project.changed', { locations: 'tokyo' }],
      ['project.created', { locations: 'london' }],
    ]);
  });

  it('pages by its cursor, GET and POST alike: every entry exactly once, the newest first', async () => {
    const whole = await everyEntry(200);
    expect(whole.length).toBeGreaterThanOrEqual(14);
    for (const [limit, method] of [
      [1, 'GET'],
      [2, 'POST'],
      [5, 'GET'],
      [13, 'POST'],
    ] as const) {
      const paged = await everyEntry(limit, method);
      expect(paged.map((e) => e.id)).toEqual(whole.map((e) => e.id));
    }
    expect(new Set(whole.map((e) => e.id)).size).toBe(whole.length);
    const first = await page({ limit: '3' });
    expect(first.entries).toEqual(whole.slice(0, 3));
    expect((await page({ limit: '3', before: first.next! })).entries).toEqual(whole.slice(3, 6));
    // One action's entries, paged the same way.
    const created = await page({ action: 'project.created', limit: '1' });
    expect(created.entries.map((e) => e.target)).toEqual(['https://taken.example/']);
    const older = await page({ action: 'project.created', limit: '1', before: created.next! }, { method: 'POST' });
    expect(older.entries.map((e) => e.target)).toEqual([SHOP]);
    expect(older.next).toBeUndefined();
  });

  it("never shows another organisation's entries", async () => {
    await change('projects', 'POST', { body: { url: BOBS, locations: ['london'] } }, who.bob.token);
    await change('budgets', 'POST', { body: { url: BOBS, budgets: { performance: 50 } } }, who.bob.token);
    const bobs = await everyEntry(1, 'GET', who.bob.token);
    expect(bobs.map((e) => [e.action, e.target, e.actor.name, e.actor.tokenPrefix])).toEqual([
      ['budgets.replaced', BOBS, 'bob', who.bob.prefix],
      ['project.created', BOBS, 'bob', who.bob.prefix],
    ]);
    const alices = await everyEntry(200);
    expect(alices.some((e) => e.target === BOBS || e.actor.name === 'bob')).toBe(false);
    // A cursor from another organisation's log reads only the caller's own entries.
    const bobsFirst = await page({ limit: '1' }, { token: who.bob.token });
    const crossed = await page({ before: bobsFirst.next!, limit: '200' });
    expect(crossed.entries.every((e) => e.actor.name !== 'bob')).toBe(true);
  });

  it('400 for a bad cursor, limit or action; 403 below admin; 401 without a valid token', async () => {
    for (const [params, message] of [
      [{ before: 'not-a-cursor' }, /before must be the `next` of a page/],
      [{ before: 'zzzzzzzzzzzz_' + '0'.repeat(24) }, /before must be the `next` of a page/],
      [{ limit: '0' }, /limit must be a whole number from 1 to 200/],
      [{ limit: '201' }, /limit must be a whole number from 1 to 200/],
      [{ limit: 'ten' }, /limit must be a whole number from 1 to 200/],
      [{ action: 'project.exploded' }, /action must be one of/],
      [{ since: 'yesterday' }, /since/],
    ] as const) {
      for (const method of ['GET', 'POST'] as const) {
        const reply = await call(
          'audit-log',
          method,
          method === 'GET' ? { query: params } : { body: params },
          who.alice.token,
        );
        expect(reply.status, JSON.stringify(params)).toBe(400);
        expect(errorsOf(reply)).toMatch(message);
      }
    }
    for (const method of ['GET', 'POST'] as const) {
      const asCarol = await call('audit-log', method, {}, who.carol.token);
      expect(asCarol.status).toBe(403);
      expect(errorsOf(asCarol)).toMatch(/needs the admin role/);
      expect((await call('audit-log', method, {}, 'pw_nope')).status).toBe(401);
      const html = await send(
        gateway.url,
        'audit-log',
        method,
        {},
        { Authorization: who.alice.token, Accept: 'text/html' },
      );
      expect(documentedBy(checker, 'audit-log', method, html).status).toBe(406);
    }
    const big = await send(
      gateway.url,
      'audit-log',
      'POST',
      { raw: JSON.stringify({ pad: 'x'.repeat(200_000) }) },
      {
        Authorization: who.alice.token,
      },
    );
    expect(documentedBy(checker, 'audit-log', 'POST', big).status).toBe(413);
    const form = await send(
      gateway.url,
      'audit-log',
      'POST',
      { raw: 'limit=1', contentType: 'application/x-www-form-urlencoded' },
      {
        Authorization: who.alice.token,
      },
    );
    expect(documentedBy(checker, 'audit-log', 'POST', form).status).toBe(415);
  });

  it('429 with Retry-After past the per-minute limit of reads', async () => {
    const limited = await startTestGateway({ natsUrl: nats.url, store, rateLimits: { updates: 1, reads: 1 } });
    try {
      const { token } = await limited.admin.createUser('busy');
      const first = await send(limited.url, 'audit-log', 'GET', {}, { Authorization: token });
      expect(documentedBy(checker, 'audit-log', 'GET', first).status).toBe(200);
      for (const method of ['GET', 'POST'] as const) {
        const over = await send(limited.url, 'audit-log', method, {}, { Authorization: token });
        expect(documentedBy(checker, 'audit-log', method, over).status).toBe(429);
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    } finally {
      await limited.stop();
    }
  });

  it('500 asks to try again and leaks nothing when the log cannot be read, or a change not recorded', async () => {
    broken = new Set(['listAuditEntries']);
    try {
      for (const method of ['GET', 'POST'] as const) {
        const reply = await call('audit-log', method, {}, who.alice.token);
        expect(reply.status).toBe(500);
        expect(errorsOf(reply) + JSON.stringify(reply.body)).not.toMatch(/connection reset|db\.ts/);
      }
      // A change the log could not record is never answered as done.
      broken = new Set(['appendAuditEntry']);
      const body = { url: 'https://unrecorded.example/', locations: ['london'] };
      expect((await call('projects', 'POST', { body }, who.alice.token)).status).toBe(500);
    } finally {
      broken = new Set();
    }
  });

  it('every status documented for /v1/audit-log was seen to match an actual answer', () => {
    const documented = checker.documented().filter((key) => / \/v1\/audit-log /.test(key));
    expect(documented.length).toBeGreaterThanOrEqual(16);
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

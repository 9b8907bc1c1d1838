import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  auditLogPageSchema,
  auditResultSchema,
  errorEnvelopeSchema,
  memberListSchema,
  projectListSchema,
  tokenCreatedSchema,
  tokenListSchema,
  type Role,
  type TokenScope,
} from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import { issueToken, type MongoStore, type UserRecord } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import { documented, errorsOf, send, type Params, type Reply } from '../support/api-requests.ts';
import { isolatedNats, silentLogger, startTestGateway, testStore, type TestGateway } from '../support/test-services.ts';
import { breakableStore } from '../support/breakable-store.ts';

// Roles and scoped tokens (issue 33, items 2 and 3) over a real gateway, nats-server and
// MongoDB-wire server, every answer checked against /v1/openapi.json. One organisation,
// web-team, with an admin, an editor and a viewer; tokens of every scope; a third party (eve)
// in an organisation of her own. A viewer and a `read` token read everything and change
// nothing; an editor changes projects but not tokens, members or credentials; a `ci` token
// measures and annotates its project and nothing else; expired and orphaned tokens are 401.

const SHOP = 'https://shop.example/';
const OTHER = 'https://other.example/';
const EVES = 'https://eve.example/';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Request = { query?: Params; body?: unknown; raw?: string; contentType?: string };

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
let orgId: string;
const users: Record<string, UserRecord> = {};
const tokens: Record<string, string> = {};
let eve: string;
let dates: [string, string];
let updateId: string;
let webhookId: string;
/** Set: the store fails the token and member calls (a database that breaks mid-request). */
let broken = false;

async function call(method: Method, path: string, params: Request, token: string | null, headers = {}) {
  const auth: Record<string, string> = token === null ? {} : { Authorization: token };
  return documented(checker, path, method, await send(gateway.url, path, method, params, { ...auth, ...headers }));
}
const ok = async (method: Method, path: string, params: Request, token: string): Promise<Reply> => {
  const reply = await call(method, path, params, token);
  expect(reply.status, `${method} ${path} ${JSON.stringify(reply.body)}`).toBe(200);
  return reply;
};
const statusOf = (reply: Reply) => (reply.status < 400 ? 'OK' : errorEnvelopeSchema.parse(reply.body).status);

/** A token made through the store, as `perfwatch admin` does: for `user` in web-team with `scope`. */
async function storeToken(user: UserRecord, scope: TokenScope): Promise<string> {
  const { token, prefix, digest } = issueToken();
  await gateway.store.addToken({ prefix, digest, userId: user.id, orgId, scope });
  return token;
}

async function member(name: string, role: Role): Promise<UserRecord> {
  await gateway.admin.createUser(name);
  const user = (await gateway.store.findUserByName(name))!;
  await gateway.store.setMembership({ orgId, userId: user.id, role, source: 'manual' });
  return user;
}

/** A new token made by `maker` through the API. */
async function apiToken(maker: string, body: Record<string, unknown>): Promise<string> {
  return tokenCreatedSchema.parse((await ok('POST', 'tokens', { body }, maker)).body).token;
}

/** The test's store, failing the token and member calls while `broken` is set. */
const TOKEN_AND_MEMBER_CALLS = ['listOrganisationTokens', 'addToken', 'revokeToken', 'listMembers', 'findUserByName'];
const breakable = (store: MongoStore) =>
  breakableStore(store, (method) => broken && TOKEN_AND_MEMBER_CALLS.includes(method));

async function syncUpdate(token: string): Promise<string> {
  const reply = await ok('POST', 'update', { body: { url: SHOP, device: 'mobile' } }, token);
  return auditResultSchema.parse(reply.body).mobile!.london!.lighthouse.date;
}

async function waitDone(id: string, token: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { body } = await ok('GET', `updates/${id}`, {}, token);
    if ((body as { status: string }).status === 'done') return;
    await sleep(50);
  }
  throw new Error(`update ${id} never finished`);
}

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    store: breakable(await testStore()),
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      PERFWATCH_TRUSTED_LOCATIONS: ['london'],
    },
  });
  agentConn = await connect({ servers: nats.url });
  const runner = fixtureRunner({ delayMs: 5 });
  agent = startAgent({ nc: agentConn, location: 'london', runner, logger: silentLogger, agentId: 'london' });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
  ({ id: orgId } = await gateway.store.createOrganisation({ name: 'web-team' }));
  for (const [name, role] of [
    ['ada', 'admin'],
    ['ed', 'editor'],
    ['vi', 'viewer'],
    ['leaver', 'viewer'],
  ] as const)
    users[name] = await member(name, role);
  tokens['admin'] = await storeToken(users['ada']!, 'admin');
  tokens['editor'] = await storeToken(users['ed']!, 'editor');
  // A viewer's admin-scoped token is a viewer's: a token never does more than its member.
  tokens['viewer'] = await storeToken(users['vi']!, 'admin');
  tokens['leaver'] = await storeToken(users['leaver']!, 'read');
  ({ token: eve } = await gateway.admin.createUser('eve'));
  await ok('POST', 'projects', { body: { url: EVES, locations: ['london'], runs: 1 } }, eve);
  await seedOrganisation(tokens['admin']);
  tokens['read'] = await apiToken(tokens['admin'], { scope: 'read', label: 'the wall screen' });
  tokens['ci'] = await apiToken(tokens['admin'], { scope: 'ci', projects: [SHOP], expires: '30d', label: 'shop CI' });
}, 120_000);

/** web-team's projects with something of everything a project has, made by its admin. */
async function seedOrganisation(admin: string): Promise<void> {
  for (const url of [SHOP, OTHER])
    await ok('POST', 'projects', { body: { url, locations: ['london'], runs: 1 } }, admin);
  dates = [await syncUpdate(admin), await syncUpdate(admin)];
  const { body } = await ok('POST', 'update', { body: { url: SHOP, device: 'mobile', mode: 'async' } }, admin);
  updateId = (body as { id: string }).id;
  await waitDone(updateId, admin);
  await ok('POST', 'budgets', { body: { url: SHOP, budgets: { performance: 10 } } }, admin);
  const hook = await ok('POST', 'webhooks', { body: { targetUrl: 'http://127.0.0.1:9/hook' } }, admin);
  webhookId = (hook.body as { created: { id: string } }).created.id;
  await ok('POST', 'annotations', { body: { url: SHOP, text: 'deploy 1', date: dates[0] } }, admin);
  await ok('POST', 'credentials', { body: { url: SHOP, auth: { cookies: [{ name: 's', value: 'v' }] } } }, admin);
  await ok('PUT', 'projects/repository', { body: link() }, admin);
}

const link = () => ({
  url: SHOP,
  forge: 'github',
  repository: 'acme/shop',
  token: 'ghp_x',
  webhookSecret: 'w'.repeat(20),
});

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await gateway?.store.close();
  await nats?.dispose();
});

/** Every read a viewer may make, with a 200 answer. */
const reads = (): Array<[string, Params]> => [
  ['projects', {}],
  ['updates', { url: SHOP }],
  [`updates/${updateId}`, {}],
  ['audit', { url: SHOP, date: dates[0] }],
  ['compare', { url: SHOP, from: dates[0], to: dates[1] }],
  ['overview', { startDate: dates[0].slice(0, 10), endDate: dates[1].slice(0, 10) }],
  ['budgets', { url: SHOP }],
  ['annotations', { url: SHOP }],
  ['credentials', { url: SHOP }],
  ['projects/repository', { url: SHOP }],
  ['projects/flow', { url: SHOP }],
  ['members', {}],
];

/** Every kind of write, each aimed at web-team's project or its settings. */
const writes = (): Array<[Method, string, Request]> => [
  ['POST', 'projects', { body: { url: 'https://new.example/', locations: ['london'] } }],
  ['PATCH', 'projects', { body: { url: SHOP, runs: 3 } }],
  ['DELETE', 'projects', { query: { url: SHOP } }],
  ['POST', 'budgets', { body: { url: SHOP, budgets: { performance: 99 } } }],
  ['POST', 'webhooks', { body: { targetUrl: 'http://127.0.0.1:9/other' } }],
  ['POST', 'webhooks', { body: { remove: webhookId } }],
  ['POST', 'annotations', { body: { url: SHOP, text: 'not mine to add' } }],
  ['POST', 'credentials', { body: { url: SHOP, clear: true } }],
  ['PUT', 'projects/repository', { body: { ...link(), repository: 'acme/elsewhere' } }],
  ['DELETE', 'projects/repository', { query: { url: SHOP } }],
  ['PUT', 'projects/flow', { body: { url: SHOP, flow: { steps: [{ kind: 'navigate', name: 'home' }] } } }],
  ['DELETE', 'projects/flow', { query: { url: SHOP } }],
  ['GET', 'update', { query: { url: SHOP, mode: 'async' } }],
  ['POST', 'update', { body: { url: SHOP, mode: 'async' } }],
  ['POST', 'tokens', { body: { scope: 'read' } }],
  ['DELETE', 'tokens', { query: { prefix: tokens['admin']!.slice(3, 11) } }],
  ['PUT', 'members', { body: { user: 'vi', role: 'admin' } }],
  ['DELETE', 'members', { query: { user: 'ed' } }],
];

/** What web-team has, as its admin reads it: what no refused write may change. */
async function organisationState() {
  const admin = tokens['admin']!;
  const read = async (path: string, query: Params = {}) => (await ok('GET', path, { query }, admin)).body;
  const webhooks = (await read('webhooks')) as { webhooks: Array<{ id: string; targetUrl: string }> };
  return {
    projects: await read('projects'),
    updates: await read('updates', { url: SHOP }),
    budgets: await read('budgets', { url: SHOP }),
    webhooks: webhooks.webhooks.map(({ id, targetUrl }) => ({ id, targetUrl })),
    annotations: await read('annotations', { url: SHOP }),
    credentials: await read('credentials', { url: SHOP }),
    repository: await read('projects/repository', { url: SHOP }),
    flow: await read('projects/flow', { url: SHOP }),
    members: await read('members'),
    tokens: await read('tokens'),
  };
}

describe('a viewer and a read token', () => {
  it('read every endpoint a viewer may (200) and are refused every write (403 FORBIDDEN); nothing changes', async () => {
    const before = await organisationState();
    for (const who of ['viewer', 'read'] as const) {
      for (const [path, query] of reads()) await ok('GET', path, { query }, tokens[who]!);
      for (const [method, path, params] of writes()) {
        const reply = await call(method, path, params, tokens[who]!);
        expect([reply.status, statusOf(reply)], `${who}: ${method} ${path}`).toEqual([403, 'FORBIDDEN']);
        expect(errorsOf(reply)).toMatch(/needs the (editor|admin) role; this token has viewer/);
      }
      // Tokens are an admin's to list; webhooks, whose URLs are secrets, an editor's.
      expect((await call('GET', 'tokens', {}, tokens[who]!)).status).toBe(403);
      const hooks = await call('GET', 'webhooks', {}, tokens[who]!);
      expect([hooks.status, errorsOf(hooks)]).toEqual([
        403,
        'reading this needs the editor role; this token has viewer',
      ]);
    }
    expect(await organisationState()).toEqual(before);
  });
});

describe('an editor', () => {
  it('changes projects (200) but not tokens, members, credentials or repository links (403)', async () => {
    const editor = tokens['editor']!;
    const url = 'https://editor.example/';
    await ok('POST', 'projects', { body: { url, locations: ['london'], runs: 1 } }, editor);
    await ok('PATCH', 'projects', { body: { url, runs: 2 } }, editor);
    await ok('POST', 'budgets', { body: { url, budgets: { lcp: 2500 } } }, editor);
    await ok('POST', 'annotations', { body: { url, text: 'release' } }, editor);
    await ok('DELETE', 'projects', { query: { url } }, editor);
    const before = await organisationState();
    for (const [method, path, params] of writes().filter(([, path]) =>
      ['tokens', 'members', 'credentials', 'projects/repository'].includes(path),
    )) {
      const reply = await call(method, path, params, editor);
      expect([reply.status, statusOf(reply)], `${method} ${path}`).toEqual([403, 'FORBIDDEN']);
      expect(errorsOf(reply)).toMatch(/needs the admin role; this token has editor/);
    }
    // A scope above the caller's role: an editor asking for an admin token.
    const above = await call('POST', 'tokens', { body: { scope: 'admin' } }, editor);
    expect([above.status, statusOf(above)]).toEqual([403, 'FORBIDDEN']);
    expect(await organisationState()).toEqual(before);
  });
});

describe('a ci token', () => {
  it('runs an update of its project and annotates it; another project, or organisation’s, is 404', async () => {
    const ci = tokens['ci']!;
    const { body } = await ok('POST', 'update', { body: { url: SHOP, device: 'mobile', mode: 'async' } }, ci);
    await waitDone((body as { id: string }).id, ci);
    await ok('POST', 'annotations', { body: { url: SHOP, text: 'ci deploy' } }, ci);
    expect(projectListSchema.parse((await ok('GET', 'projects', {}, ci)).body).projects.map((p) => p.url)).toEqual([
      SHOP,
    ]);
    for (const url of [OTHER, EVES]) {
      for (const [path, params] of [
        ['update', { body: { url, mode: 'async' } }],
        ['updates', { body: { url } }],
        ['annotations', { body: { url, text: 'not mine' } }],
      ] as const) {
        const reply = await call('POST', path, params, ci);
        expect([reply.status, statusOf(reply)], `${path} ${url}`).toEqual([404, 'NOT_FOUND']);
      }
    }
  });

  it('is refused settings, tokens, members and the overview (403)', async () => {
    const before = await organisationState();
    const refused: Array<[Method, string, Request]> = [
      ...writes().filter(([method, path]) => !['update', 'annotations'].includes(path) && method !== 'GET'),
      ['GET', 'overview', { query: reads()[5]![1] }],
      ['GET', 'members', {}],
      ['GET', 'tokens', {}],
    ];
    for (const [method, path, params] of refused) {
      const reply = await call(method, path, params, tokens['ci']!);
      expect([reply.status, statusOf(reply)], `${method} ${path}`).toEqual([403, 'FORBIDDEN']);
      expect(errorsOf(reply)).toMatch(/a ci token/);
    }
    expect(await organisationState()).toEqual(before);
  });
});

describe('tokens that no longer count', () => {
  it('an expired token is 401 with "expired", and listed as expired', async () => {
    const brief = await apiToken(tokens['admin']!, { scope: 'read', expires: '1s' });
    expect((await call('GET', 'projects', {}, brief)).status).toBe(200);
    await sleep(1_100);
    const reply = await call('GET', 'projects', {}, brief);
    expect([reply.status, statusOf(reply)]).toEqual([401, 'UNAUTHORIZED']);
    expect(errorEnvelopeSchema.parse(reply.body).message).toMatch(/expired/);
    const listed = tokenListSchema.parse((await ok('GET', 'tokens', {}, tokens['admin']!)).body).tokens;
    expect(listed.find((t) => t.prefix === brief.slice(3, 11))).toMatchObject({ scope: 'read', expired: true });
  });

  it('a token whose member was removed is revoked with the membership (401); the removal is refused for the last admin (409)', async () => {
    const leaver = tokens['leaver']!;
    expect((await call('GET', 'projects', {}, leaver)).status).toBe(200);
    await ok('DELETE', 'members', { query: { user: 'leaver' } }, tokens['admin']!);
    const reply = await call('GET', 'projects', {}, leaver);
    expect([reply.status, statusOf(reply)]).toEqual([401, 'UNAUTHORIZED']);
    expect(errorsOf(reply)).toMatch(/unknown or revoked token/);
    const listed = tokenListSchema.parse((await ok('GET', 'tokens', {}, tokens['admin']!)).body).tokens;
    expect(listed.find((t) => t.prefix === leaver.slice(3, 11))?.revokedAt).toEqual(expect.any(String));
    // Taken back, they start without it.
    await ok('PUT', 'members', { body: { user: 'leaver', role: 'viewer' } }, tokens['admin']!);
    expect((await call('GET', 'projects', {}, leaver)).status).toBe(401);
    await ok('DELETE', 'members', { query: { user: 'leaver' } }, tokens['admin']!);
    for (const [method, params] of [
      ['DELETE', { query: { user: 'ada' } }],
      ['PUT', { body: { user: 'ada', role: 'editor' } }],
    ] as const) {
      const refused = await call(method, 'members', params, tokens['admin']!);
      expect([refused.status, statusOf(refused)]).toEqual([409, 'CONFLICT']);
      expect(errorsOf(refused)).toMatch(/ada is the last admin/);
    }
  });

  it('a token made with an expiring token expires no later than it', async () => {
    const made = tokenCreatedSchema.parse(
      (await ok('POST', 'tokens', { body: { scope: 'admin', expires: '1h', label: 'contractor' } }, tokens['admin']!))
        .body,
    );
    const child = async (body: Record<string, unknown>) =>
      tokenCreatedSchema.parse((await ok('POST', 'tokens', { body }, made.token)).body).expiresAt;
    // Asked for none, or for longer: the maker's expiry. Asked for sooner: that.
    expect(await child({ scope: 'admin' })).toBe(made.expiresAt);
    expect(await child({ scope: 'read', expires: '30d' })).toBe(made.expiresAt);
    const sooner = Date.parse((await child({ scope: 'read', expires: '10m' }))!);
    expect(sooner).toBeLessThan(Date.parse(made.expiresAt!));
  });

  it('a revoked token is 401; revoking it again answers the same', async () => {
    const spare = await apiToken(tokens['admin']!, { scope: 'editor', label: 'spare' });
    const prefix = spare.slice(3, 11);
    for (let i = 0; i < 2; i++)
      expect((await ok('DELETE', 'tokens', { query: { prefix } }, tokens['admin']!)).body).toEqual({
        prefix,
        revoked: true,
      });
    expect((await call('GET', 'projects', {}, spare)).status).toBe(401);
  });
});

describe('/v1/tokens and /v1/members of one organisation', () => {
  it('lists the organisation’s tokens without a secret; another organisation sees none of them', async () => {
    const { body } = await ok('GET', 'tokens', {}, tokens['admin']!);
    const listed = tokenListSchema.parse(body).tokens;
    expect(listed.find((t) => t.label === 'shop CI')).toMatchObject({
      scope: 'ci',
      projects: [SHOP],
      user: 'ada',
      revokedAt: null,
      expired: false,
    });
    expect(listed.map((t) => t.user)).toEqual(expect.arrayContaining(['ada', 'ed', 'vi']));
    const text = JSON.stringify(body);
    for (const token of Object.values(tokens)) expect(text).not.toContain(token.slice(11));
    expect(text).not.toMatch(/[0-9a-f]{64}|digest/);
    const eves = tokenListSchema.parse((await ok('GET', 'tokens', {}, eve)).body).tokens;
    expect(eves.map((t) => t.prefix)).toEqual([eve.slice(3, 11)]);
    const members = memberListSchema.parse((await ok('GET', 'members', {}, eve)).body).members;
    expect(members.map((m) => [m.user, m.role])).toEqual([['eve', 'admin']]);
    const theirs = await call('DELETE', 'tokens', { query: { prefix: tokens['ci']!.slice(3, 11) } }, eve);
    expect([theirs.status, statusOf(theirs)]).toEqual([404, 'NOT_FOUND']);
    const mine = await call('DELETE', 'tokens', { query: { prefix: eve.slice(3, 11) } }, tokens['admin']!);
    expect(mine.status).toBe(404);
    expect((await call('GET', 'projects', {}, eve)).status).toBe(200);
    expect((await call('GET', 'projects', {}, tokens['ci']!)).status).toBe(200);
  });

  it('a new token acts for its maker in the organisation; 400 naming the field', async () => {
    const made = tokenCreatedSchema.parse((await ok('POST', 'tokens', { body: { scope: 'editor' } }, eve)).body);
    expect(made).toMatchObject({ scope: 'editor', user: 'eve', projects: null, expiresAt: null, label: null });
    expect(made.token.slice(3, 11)).toBe(made.prefix);
    expect(projectListSchema.parse((await ok('GET', 'projects', {}, made.token)).body).projects).toHaveLength(1);
    for (const [body, field] of [
      [{}, /^scope must be one of read, ci, editor, admin$/m],
      [{ scope: 'ci' }, /^projects is required for scope ci$/m],
      [{ scope: 'ci', projects: [] }, /^projects must not be empty$/m],
      [{ scope: 'read', projects: [EVES] }, /^projects goes with scope ci only$/m],
      [{ scope: 'ci', projects: [SHOP] }, /^projects: no project of this organisation has the URL https:\/\/shop/m],
      [{ scope: 'read', expires: '5' }, /^expires 5: give a unit/m],
      [{ scope: 'read', expires: '2001-01-01' }, /^expires 2001-01-01: .* is not in the future$/m],
      [{ scope: 'read', secret: 'x' }, /^unknown parameter\(s\): secret$/m],
    ] as const) {
      const reply = await call('POST', 'tokens', { body }, eve);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(errorsOf(reply)).toMatch(field);
    }
    for (const method of ['GET', 'DELETE'] as const) {
      const reply = await call(method, 'tokens', { query: { prefix: made.prefix, scope: 'read' } }, eve);
      expect([reply.status, reply.headers.get('allow')]).toEqual([405, 'POST']);
    }
    const badPrefix = await call('DELETE', 'tokens', { query: { prefix: 'short' } }, eve);
    expect(errorsOf(badPrefix)).toMatch(/^prefix must be the 8 characters after pw_, as listed$/m);
  });

  it('adds an existing user, changes a role, removes a member; 404 for a name nobody has', async () => {
    const admin = tokens['admin']!;
    const added = await ok('PUT', 'members', { body: { user: 'eve', role: 'viewer' } }, admin);
    expect(added.body).toMatchObject({ member: { user: 'eve', role: 'viewer', source: 'manual' }, added: true });
    const changed = await ok('PUT', 'members', { body: { user: 'eve', role: 'editor' } }, admin);
    expect(changed.body).toMatchObject({ member: { user: 'eve', role: 'editor' }, added: false });
    // Eve's own token stays in her organisation: joining web-team shows her none of its tokens.
    expect(tokenListSchema.parse((await ok('GET', 'tokens', {}, eve)).body).tokens.map((t) => t.user)).not.toContain(
      'ada',
    );
    expect((await ok('DELETE', 'members', { query: { user: 'eve' } }, admin)).body).toEqual({
      user: 'eve',
      removed: true,
    });
    for (const [method, params] of [
      ['PUT', { body: { user: 'nobody-at-all', role: 'viewer' } }],
      ['DELETE', { query: { user: 'nobody-at-all' } }],
      ['DELETE', { query: { user: 'eve' } }],
    ] as const) {
      const reply = await call(method, 'members', params, admin);
      expect([reply.status, statusOf(reply)]).toEqual([404, 'NOT_FOUND']);
    }
    const bad = await call('PUT', 'members', { body: { user: 'ed', role: 'owner' } }, admin);
    expect(errorsOf(bad)).toMatch(/^role must be one of viewer, editor, admin$/m);
    expect(errorsOf(await call('DELETE', 'members', { query: {} }, admin))).toMatch(/^user is required$/m);
    const members = memberListSchema.parse((await ok('GET', 'members', {}, tokens['viewer']!)).body).members;
    expect(members.map((m) => [m.user, m.role])).toEqual([
      ['ada', 'admin'],
      ['ed', 'editor'],
      ['vi', 'viewer'],
    ]);
  });
});

describe('the audit log', () => {
  it('lists each token and member change with its actor, nothing refused, never a secret', async () => {
    const { body } = await ok('GET', 'audit-log', { query: { limit: '200' } }, tokens['admin']!);
    const entries = auditLogPageSchema.parse(body).entries;
    const ours = entries.filter(({ action }) => /^(token|member)\./.test(action));
    const prefix = (token: string) => token.slice(3, 11);
    expect(ours.map(({ action, target, actor }) => [action, target, actor.name])).toEqual(
      expect.arrayContaining([
        ['token.created', prefix(tokens['read']!), 'ada'],
        ['token.created', prefix(tokens['ci']!), 'ada'],
        ['member.removed', 'leaver', 'ada'],
        ['member.added', 'eve', 'ada'],
        ['member.changed', 'eve', 'ada'],
        ['member.removed', 'eve', 'ada'],
      ]),
    );
    expect(ours.find(({ target }) => target === prefix(tokens['ci']!))?.details).toMatchObject({
      scope: 'ci',
      projects: SHOP,
      label: 'shop CI',
    });
    expect(ours.filter(({ action }) => action === 'token.revoked')).toHaveLength(1);
    // The refused changes (a viewer's, an editor's, a ci token's, the last admin's demotion) left nothing.
    expect(ours.every(({ actor }) => actor.name === 'ada')).toBe(true);
    expect(ours.filter(({ target }) => target === 'ada')).toEqual([]);
    const text = JSON.stringify(body);
    for (const token of Object.values(tokens)) expect(text).not.toContain(token.slice(11));
  });
});

describe('/v1/tokens and /v1/members: the statuses every request shares', () => {
  const requests = (): Array<[Method, string, Request]> => [
    ['GET', 'tokens', {}],
    ['POST', 'tokens', { body: { scope: 'read' } }],
    ['DELETE', 'tokens', { query: { prefix: tokens['read']!.slice(3, 11) } }],
    ['GET', 'members', {}],
    ['PUT', 'members', { body: { user: 'vi', role: 'viewer' } }],
    ['DELETE', 'members', { query: { user: 'nobody-at-all' } }],
  ];

  it('400 without a token, 401 with a bad one, 406 when JSON is refused, 413 and 415 for a body not read', async () => {
    for (const [method, path, params] of requests()) {
      expect(errorsOf(await call(method, path, params, null))).toMatch(/Authorization/);
      expect((await call(method, path, params, 'pw_nope')).status).toBe(401);
      expect((await call(method, path, params, tokens['admin']!, { Accept: 'text/html' })).status).toBe(406);
      if (method === 'POST' || method === 'PUT') {
        const big = await call(method, path, { raw: JSON.stringify({ pad: 'x'.repeat(200_000) }) }, tokens['admin']!);
        expect(big.status).toBe(413);
        const form = { raw: 'scope=read', contentType: 'application/x-www-form-urlencoded' };
        expect((await call(method, path, form, tokens['admin']!)).status).toBe(415);
      }
    }
  });

  it('429 with Retry-After past the per-minute limit', async () => {
    const limited = await startTestGateway({ natsUrl: nats.url, rateLimits: { updates: 1, reads: 1 } });
    try {
      const { token } = await limited.admin.createUser('busy');
      expect((await send(limited.url, 'projects', 'GET', {}, { Authorization: token })).status).toBe(200);
      for (const [method, path, params] of requests()) {
        const over = documented(
          checker,
          path,
          method,
          await send(limited.url, path, method, params, { Authorization: token }),
        );
        expect(over.status, `${method} ${path}`).toBe(429);
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    } finally {
      await limited.stop();
    }
  });

  it('counts fair-use limits per organisation: its members share them, another organisation keeps its own', async () => {
    const limited = await startTestGateway({ natsUrl: nats.url, rateLimits: { updates: 1, reads: 2 } });
    try {
      const { admin, store } = limited;
      await admin.createUser('ann');
      await admin.createUser('ben');
      const { token: other } = await admin.createUser('cid');
      const shared = await store.createOrganisation({ name: 'shared-squad' });
      const [ann, ben] = [(await store.findUserByName('ann'))!, (await store.findUserByName('ben'))!];
      await store.setMembership({ orgId: shared.id, userId: ann.id, role: 'editor', source: 'manual' });
      await store.setMembership({ orgId: shared.id, userId: ben.id, role: 'viewer', source: 'manual' });
      const annToken = (await admin.createToken('ann', { org: 'shared-squad' })).token;
      const benToken = (await admin.createToken('ben', { org: 'shared-squad' })).token;
      const read = (token: string) => send(limited.url, 'projects', 'GET', {}, { Authorization: token });
      expect((await read(annToken)).status).toBe(200);
      expect((await read(benToken)).status).toBe(200);
      // The organisation's two reads of the minute are spent, whichever member asks next.
      expect((await read(annToken)).status).toBe(429);
      expect((await read(benToken)).status).toBe(429);
      // Ann's own organisation, and another user's, count apart.
      const annOwn = (await admin.createToken('ann')).token;
      expect((await read(annOwn)).status).toBe(200);
      expect((await read(other)).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });

  it('500 asks to try again and leaks nothing when the database fails', async () => {
    broken = true;
    try {
      for (const [method, path, params] of requests()) {
        const reply = await call(method, path, params, tokens['admin']!);
        expect(reply.status, `${method} ${path}`).toBe(500);
        expect(JSON.stringify(reply.body)).not.toMatch(/connection reset|db\.ts/);
      }
    } finally {
      broken = false;
    }
  });

  it('every status documented for /v1/tokens and /v1/members was seen to match an actual answer', () => {
    const ours = /^(get|post|put|delete) \/v1\/(tokens|members) /;
    const documentedKeys = checker.documented().filter((key) => ours.test(key));
    expect(documentedKeys.length).toBeGreaterThanOrEqual(40);
    expect(documentedKeys.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

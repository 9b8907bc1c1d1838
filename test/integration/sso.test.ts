import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayConfigWith, startGateway, type GatewayRuntime, type MongoStore } from '@perfwatch/gateway';
import { freePort } from '../support/local-servers.ts';
import { signInWithForm, startOidcProvider, type OidcProvider } from '../support/oidc-provider.ts';
import { silentLogger, testStore } from '../support/test-services.ts';

/**
 * The dashboard's single sign-on against a real OpenID provider (panva's oidc-provider, its own
 * login page): the session cookie and its flags, the CSRF header every request of a session
 * needs, groups made into organisations and roles, refusals (no perfwatch group, a sign-in's
 * state or nonce not its own, a cookie forged or expired), and signing out.
 */

const CLIENT_ID = 'perfwatch';
const CLIENT_SECRET = 'perfwatch-sso-test-secret';
const user = (sub: string, groups: string[]) => ({
  sub,
  email: `${sub}@example.test`,
  name: sub,
  password: `${sub}-password`,
  groups,
});
const ALICE = user('alice', ['perfwatch:web-team:admin', 'perfwatch:sre:viewer', 'staff']);
const VERA = user('vera', ['perfwatch:web-team:viewer']);
const BOB = user('bob', ['staff', 'other-app:web-team:admin']);
// A group naming a user's own organisation (carol's, made by the admin CLI), beside a real one.
const MALLORY = user('mallory', ['perfwatch:carol:admin', 'perfwatch:web-team:viewer']);

let provider: OidcProvider;
let store: MongoStore;
let gateway: GatewayRuntime;
let base: string;
let redirectUri: string;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  redirectUri = `${base}/auth/sso/callback`;
  provider = await startOidcProvider({
    users: [ALICE, VERA, BOB, MALLORY],
    client: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [redirectUri] },
  });
  store = await testStore();
  gateway = await startGateway({
    localAgents: [],
    store,
    logger: silentLogger,
    config: gatewayConfigWith({
      PORT: port,
      HOST: '127.0.0.1',
      PUBLIC_URL: base,
      SSO_ISSUER_URL: provider.issuer,
      SSO_CLIENT_ID: CLIENT_ID,
      SSO_CLIENT_SECRET: CLIENT_SECRET,
      SSO_ALLOW_HTTP_ISSUER: true,
      AUTH_FAILURES_PER_MINUTE: 10_000,
      SHUTDOWN_READINESS_DELAY_MS: 0,
    }),
  });
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await store?.close();
  await provider?.stop();
});

/** The value a Set-Cookie line gives `name`, with the whole line. */
function setCookie(answer: Response, name: string): { value: string; line: string } | undefined {
  const line = answer.headers.getSetCookie().find((candidate) => candidate.startsWith(`${name}=`));
  return line === undefined ? undefined : { value: line.slice(name.length + 1).split(';')[0]!, line };
}

/** GET /auth/sso/login: the provider's authorization URL and the sign-in's sealed cookie. */
async function startSignIn(returnTo?: string) {
  const login = await fetch(`${base}/auth/sso/login${returnTo ? `?returnTo=${encodeURIComponent(returnTo)}` : ''}`, {
    redirect: 'manual',
  });
  expect(login.status).toBe(302);
  const loginCookie = setCookie(login, '__Host-perfwatch_sso_login')!;
  expect(loginCookie.line).toMatch(/; Path=\/; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/);
  return { url: new URL(login.headers.get('location')!), loginCookie: loginCookie.value };
}

/** Through the provider's login page and back to the callback, with the sign-in's cookie unless told otherwise. */
async function finishSignIn(url: URL, who: typeof ALICE, loginCookie: string | null) {
  const signedIn = await signInWithForm(url, {
    login: who.email,
    password: who.password,
    redirectUri,
    timeoutMs: provider.requestTimeoutMs,
  });
  expect(signedIn.callback, signedIn.page).toBeDefined();
  return fetch(signedIn.callback!, {
    redirect: 'manual',
    headers: loginCookie === null ? {} : { cookie: `__Host-perfwatch_sso_login=${loginCookie}` },
  });
}

const sessionSchema = (body: unknown) =>
  body as {
    sso: boolean;
    signedIn: boolean;
    user: { id: string; name: string };
    organisation: string;
    organisations: Array<{ id: string; name: string; role: string }>;
    csrfToken: string;
  };

/** A signed-in session: its cookie, and what GET /auth/session tells about it. */
async function signIn(who: typeof ALICE) {
  const { url, loginCookie } = await startSignIn();
  const callback = await finishSignIn(url, who, loginCookie);
  expect(callback.status).toBe(302);
  const cookie = setCookie(callback, '__Host-perfwatch_session')!;
  const session = sessionSchema(
    await (await fetch(`${base}/auth/session`, { headers: sessionHeaders(cookie.value) })).json(),
  );
  return { callback, cookie, session };
}

const sessionHeaders = (cookie: string, csrf?: string): Record<string, string> => ({
  cookie: `__Host-perfwatch_session=${cookie}`,
  accept: 'application/json',
  'content-type': 'application/json',
  ...(csrf === undefined ? {} : { 'x-csrf-token': csrf }),
});

const projects = (headers: Record<string, string>, body: object = {}) =>
  fetch(`${base}/v1/projects`, { method: 'POST', headers, body: JSON.stringify(body) });

describe('single sign-on', () => {
  it('tells the dashboard SSO is on, and that nobody is signed in without a session', async () => {
    const answer = await fetch(`${base}/auth/session`);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(await answer.json()).toEqual({ sso: true, signedIn: false });
  });

  it('signs in through the provider: a session cookie with its flags, of which only the digest is stored', async () => {
    const { callback, cookie } = await signIn(ALICE);
    expect(callback.headers.get('location')).toBe('/');
    expect(cookie.line).toMatch(
      /^__Host-perfwatch_session=[\w-]{43}; Path=\/; Max-Age=28800; HttpOnly; Secure; SameSite=Lax$/,
    );
    // The sign-in's own cookie is spent.
    expect(setCookie(callback, '__Host-perfwatch_sso_login')?.line).toMatch(/Max-Age=0/);
    expect(await store.findSession(createHash('sha256').update(cookie.value).digest('hex'))).toMatchObject({
      userName: ALICE.email,
    });
    expect(await store.findSession(cookie.value)).toBeNull();
  });

  it('goes back to the dashboard page it was started from, never to another site', async () => {
    for (const [asked, back] of [
      ['/#/project?url=x', '/#/project?url=x'],
      ['https://evil.example/', '/'],
      ['//evil.example/', '/'],
    ]) {
      const { url, loginCookie } = await startSignIn(asked);
      const callback = await finishSignIn(url, ALICE, loginCookie);
      expect(callback.headers.get('location')).toBe(back);
    }
  });

  it('makes the groups organisations and roles, and leaves other groups out', async () => {
    const { session } = await signIn(ALICE);
    expect(session).toMatchObject({ sso: true, signedIn: true, user: { name: ALICE.email } });
    expect(session.organisations.map(({ name, role }) => ({ name, role }))).toEqual(
      expect.arrayContaining([
        { name: 'web-team', role: 'admin' },
        { name: 'sre', role: 'viewer' },
      ]),
    );
    expect(session.organisations).toHaveLength(2);
    expect(session.csrfToken).toMatch(/^[\w-]{43}$/);
  });

  it('records in each organisation’s audit log what the groups changed, once', async () => {
    const { cookie, session } = await signIn(ALICE);
    await signIn(ALICE);
    const answer = await fetch(`${base}/v1/audit-log`, {
      method: 'POST',
      headers: sessionHeaders(cookie.value, session.csrfToken),
      body: '{}',
    });
    const { entries } = (await answer.json()) as {
      entries: Array<{ action: string; target: string; details: object; actor: { name: string; via: string } }>;
    };
    const fromSso = entries.filter((entry) => 'source' in entry.details);
    // Made in the same millisecond, they may be listed in either order.
    expect(fromSso.map(({ action, target, details }) => ({ action, target, details }))).toEqual(
      expect.arrayContaining([
        { action: 'member.added', target: ALICE.email, details: { role: 'admin', source: 'sso' } },
        { action: 'organisation.created', target: 'web-team', details: { source: 'sso' } },
      ]),
    );
    expect(fromSso).toHaveLength(2);
    for (const { actor } of fromSso) expect(actor).toMatchObject({ name: ALICE.email, via: 'session' });
  });

  it("never makes anyone a member of a user's own organisation, whatever a group names", async () => {
    await store.createUser('carol');
    const carol = (await store.findUserByName('carol'))!;
    const { session } = await signIn(MALLORY);
    expect(session.organisations.map(({ name, role }) => ({ name, role }))).toEqual([
      { name: 'web-team', role: 'viewer' },
    ]);
    expect((await store.listMembers(carol.id)).map((m) => m.userId)).toEqual([carol.id]);
  });

  it('answers the API for a session with its CSRF header, and 403 naming the header without it', async () => {
    const { cookie, session } = await signIn(ALICE);
    const listed = await projects(sessionHeaders(cookie.value, session.csrfToken));
    expect(listed.status).toBe(200);
    for (const csrf of [undefined, 'x'.repeat(43), '']) {
      const refused = await projects(sessionHeaders(cookie.value, csrf));
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({
        status: 'FORBIDDEN',
        errors: [expect.stringContaining('X-CSRF-Token')],
      });
    }
    // A GET is held to it too: some of the API's GETs write.
    const get = await fetch(`${base}/v1/projects`, { headers: sessionHeaders(cookie.value) });
    expect(get.status).toBe(403);
  });

  it('acts in the current organisation with its role, and switches organisation with the CSRF header only', async () => {
    const { cookie, session } = await signIn(ALICE);
    const headers = sessionHeaders(cookie.value, session.csrfToken);
    const webTeam = session.organisations.find(({ name }) => name === 'web-team')!;
    const sre = session.organisations.find(({ name }) => name === 'sre')!;
    const choose = (organisation: string, csrf?: string) =>
      fetch(`${base}/auth/session`, {
        method: 'POST',
        headers: sessionHeaders(cookie.value, csrf),
        body: JSON.stringify({ organisation }),
      });
    expect((await choose(webTeam.id, session.csrfToken)).status).toBe(200);
    const created = await projects(headers, { url: 'https://sso-web-team.example/' });
    expect(created.status).toBe(200);

    expect((await choose(sre.id)).status).toBe(403);
    const switched = await choose(sre.id, session.csrfToken);
    expect(sessionSchema(await switched.json()).organisation).toBe(sre.id);
    const asViewer = await projects(headers, { url: 'https://sso-sre.example/' });
    expect(asViewer.status).toBe(403);
    // Another organisation's projects are not the viewer's to see.
    expect(await (await projects(headers)).json()).toMatchObject({ projects: [] });
    expect((await choose('0'.repeat(24), session.csrfToken)).status).toBe(403);
  });

  it('gives a viewer group a viewer: reads, and 403 on writes', async () => {
    const { cookie, session } = await signIn(VERA);
    expect(session.organisations.map(({ name, role }) => ({ name, role }))).toEqual([
      { name: 'web-team', role: 'viewer' },
    ]);
    const headers = sessionHeaders(cookie.value, session.csrfToken);
    expect((await projects(headers)).status).toBe(200);
    const refused = await projects(headers, { url: 'https://vera.example/' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ status: 'FORBIDDEN' });
  });

  it('refuses a user in no perfwatch group with a page saying so, and makes no user and no session', async () => {
    const { url, loginCookie } = await startSignIn();
    const callback = await finishSignIn(url, BOB, loginCookie);
    expect(callback.status).toBe(403);
    expect(await callback.text()).toContain('no perfwatch group');
    expect(setCookie(callback, '__Host-perfwatch_session')).toBeUndefined();
    expect(await store.findUserByName(BOB.email)).toBeNull();
  });

  it('takes away at sign-in the memberships the provider gave that its groups no longer give', async () => {
    const { session } = await signIn(ALICE);
    const gone = await store.createOrganisation({ name: 'squad-that-was' });
    await store.setMembership({ orgId: gone.id, userId: session.user.id, role: 'editor', source: 'sso' });
    const byHand = await store.createOrganisation({ name: 'given-by-hand' });
    await store.setMembership({ orgId: byHand.id, userId: session.user.id, role: 'viewer', source: 'manual' });
    await signIn(ALICE);
    expect(await store.findMembership(gone.id, session.user.id)).toBeNull();
    expect(await store.findMembership(byHand.id, session.user.id)).toMatchObject({ role: 'viewer' });
    expect(
      (await store.listAuditEntries(gone.id, { limit: 10 })).map(({ action, details }) => ({ action, details })),
    ).toEqual([{ action: 'member.removed', details: { role: 'editor', source: 'sso' } }]);
  });

  it('refuses a callback whose state or nonce is not the sign-in’s own, or without its cookie', async () => {
    for (const param of ['state', 'nonce']) {
      const { url, loginCookie } = await startSignIn();
      url.searchParams.set(param, `${url.searchParams.get(param)}-changed`);
      const callback = await finishSignIn(url, ALICE, loginCookie);
      expect(callback.status, param).toBe(400);
      expect(setCookie(callback, '__Host-perfwatch_session'), param).toBeUndefined();
    }
    const { url } = await startSignIn();
    const withoutCookie = await finishSignIn(url, ALICE, null);
    expect(withoutCookie.status).toBe(400);
    expect(await withoutCookie.text()).toContain('not started here');
  });

  it('answers 401 for a forged or expired session cookie, and 400 for a request with neither cookie nor token', async () => {
    const forged = await projects(sessionHeaders('A'.repeat(43), 'x'));
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({
      status: 'UNAUTHORIZED',
      errors: [expect.stringContaining('__Host-perfwatch_session')],
    });

    const { session } = await signIn(ALICE);
    const id = 'B'.repeat(43);
    await store.addSession({
      digest: createHash('sha256').update(id).digest('hex'),
      userId: session.user.id,
      userName: ALICE.email,
      orgId: session.organisation,
      csrfToken: 'c'.repeat(43),
      createdAt: new Date(Date.now() - 60_000),
      expiresAt: new Date(Date.now() - 1_000),
    });
    expect((await projects(sessionHeaders(id, 'c'.repeat(43)))).status).toBe(401);

    const neither = await projects({ accept: 'application/json', 'content-type': 'application/json' });
    expect(neither.status).toBe(400);
  });

  it('signs out: the session ends, its cookie is cleared and no longer works', async () => {
    const { cookie, session } = await signIn(ALICE);
    const withoutCsrf = await fetch(`${base}/auth/logout`, { method: 'POST', headers: sessionHeaders(cookie.value) });
    expect(withoutCsrf.status).toBe(403);
    const out = await fetch(`${base}/auth/logout`, {
      method: 'POST',
      headers: sessionHeaders(cookie.value, session.csrfToken),
    });
    expect(out.status).toBe(204);
    expect(setCookie(out, '__Host-perfwatch_session')?.line).toMatch(/^__Host-perfwatch_session=; Path=\/; Max-Age=0/);
    expect((await projects(sessionHeaders(cookie.value, session.csrfToken))).status).toBe(401);
    expect(await (await fetch(`${base}/auth/session`, { headers: sessionHeaders(cookie.value) })).json()).toEqual({
      sso: true,
      signedIn: false,
    });
  });
});

describe('single sign-on with its provider out of reach', () => {
  it('answers the sign-in with a page saying so (503), and the dashboard still offers it', async () => {
    const deadIssuer = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await startGateway({
      localAgents: [],
      store,
      logger: silentLogger,
      config: gatewayConfigWith({
        PORT: 0,
        HOST: '127.0.0.1',
        PUBLIC_URL: 'http://127.0.0.1:9',
        SSO_ISSUER_URL: deadIssuer,
        SSO_CLIENT_ID: CLIENT_ID,
        SSO_CLIENT_SECRET: CLIENT_SECRET,
        SSO_ALLOW_HTTP_ISSUER: true,
        SHUTDOWN_READINESS_DELAY_MS: 0,
      }),
    });
    try {
      const login = await fetch(`${unreachable.http.url}/auth/sso/login`, { redirect: 'manual' });
      expect(login.status).toBe(503);
      expect(await login.text()).toContain('could not be reached');
      expect(setCookie(login, '__Host-perfwatch_sso_login')).toBeUndefined();
      expect(await (await fetch(`${unreachable.http.url}/auth/session`)).json()).toEqual({
        sso: true,
        signedIn: false,
      });
    } finally {
      await unreachable.stop();
    }
  });

  it('refuses to start half configured, naming what is missing', async () => {
    const half = startGateway({
      localAgents: [],
      store,
      logger: silentLogger,
      config: gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SSO_ISSUER_URL: 'https://idp.example/' }),
    });
    await expect(half).rejects.toThrow(/SSO_CLIENT_ID, SSO_CLIENT_SECRET, PUBLIC_URL or SSO_REDIRECT_URL/);
  });
});

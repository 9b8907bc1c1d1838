import { randomUUID } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditLogPageSchema, errorEnvelopeSchema, type AuditLogPage } from '@perfwatch/common';
import { launchBrowser } from '../support/browser.ts';
import { freePort } from '../support/local-servers.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc-provider.ts';
import { spawnPerfwatch, spawnServingAgent, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats } from '../support/test-services.ts';

/**
 * Issue 33 end to end, with every part real: the shipped `perfwatch gateway` and `perfwatch agent`
 * (Chromium and Lighthouse measuring a page of the test site), nats-server, a MongoDB-wire
 * server, a certified OpenID provider with its own login page, and Chromium driving the dashboard.
 * An admin signs in through the provider, adds a project and makes tokens on the dashboard; a ci
 * token measures the project; a viewer, signed in the same way, sees the result and is refused
 * every write, by the API and on the dashboard; an expired token is refused; the audit log names
 * who did each change.
 */

const CLIENT_ID = 'perfwatch';
const CLIENT_SECRET = 'perfwatch-e2e-sso-secret';
const person = (sub: string, groups: string[]) => ({
  sub,
  email: `${sub}@acme.test`,
  name: sub,
  password: `${sub}-password`,
  groups,
});
const ALICE = person('alice', ['perfwatch:acme:admin', 'staff']);
const VERA = person('vera', ['perfwatch:acme:viewer']);

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let provider: OidcProvider;
let gateway: PerfwatchProcess;
let agent: PerfwatchProcess;
let base: string;
let browser: Browser;
const contexts: BrowserContext[] = [];
const measured = () => `${inject('siteUrl')}index.html`;
const other = () => `${inject('siteUrl')}other-page.html`;

beforeAll(async () => {
  nats = await isolatedNats();
  const port = await freePort();
  base = `http://localhost:${port}`;
  provider = await startOidcProvider({
    users: [ALICE, VERA],
    client: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${base}/auth/sso/callback`] },
  });
  const db = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: `pwteams_${randomUUID().slice(0, 8)}` };
  gateway = spawnPerfwatch(['gateway'], {
    ...db,
    NATS_URL: nats.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: base,
    SSO_ISSUER_URL: provider.issuer,
    SSO_CLIENT_ID: CLIENT_ID,
    SSO_CLIENT_SECRET: CLIENT_SECRET,
    // The test provider is plain http on this machine; a real one is https.
    SSO_ALLOW_HTTP_ISSUER: 'true',
    SHUTDOWN_READINESS_DELAY_MS: '0',
  });
  agent = await spawnServingAgent(nats.url, 'london', 'e2e-teams-london');
  await gateway.waitFor(/gateway listening/);
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await gateway?.stop();
  await provider?.stop();
  await nats?.dispose();
});

/** A browser profile of its own, signed in through the provider's login page as `who`. */
async function signIn(who: typeof ALICE): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.click('#sso-sign-in a');
  // The provider's own page, not perfwatch's.
  await page.waitForURL((url) => url.href.startsWith(provider.issuer));
  await page.fill('input[name=login]', who.email);
  await page.fill('input[name=password]', who.password);
  await page.click('button[type=submit]');
  await page.waitForURL((url) => url.href.startsWith(base));
  await page.waitForSelector('#account');
  return page;
}

/** The session's cookie and CSRF token, to call the API as the signed-in person does. */
async function sessionOf(page: Page): Promise<{ cookie: string; csrf: string }> {
  const cookies = await page.context().cookies(base);
  const session = cookies.find((c) => c.name === '__Host-perfwatch_session');
  expect(session, 'the session cookie').toBeDefined();
  expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax' });
  const cookie = `__Host-perfwatch_session=${session!.value}`;
  const view = (await (await fetch(`${base}/auth/session`, { headers: { cookie } })).json()) as { csrfToken: string };
  return { cookie, csrf: view.csrfToken };
}

type Auth = { token: string } | { cookie: string; csrf: string };
const headersOf = (auth: Auth): Record<string, string> =>
  'token' in auth ? { Authorization: `Bearer ${auth.token}` } : { cookie: auth.cookie, 'X-CSRF-Token': auth.csrf };

/** One API request, its status and its JSON. */
async function call(auth: Auth, method: string, path: string, params: Record<string, unknown> = {}) {
  const query = method === 'GET' || method === 'DELETE';
  const url = new URL(`/v1/${path}`, base);
  if (query) for (const [k, v] of Object.entries(params)) url.searchParams.set(k, String(v));
  const answer = await fetch(url, {
    method,
    headers: {
      Accept: 'application/json',
      ...headersOf(auth),
      ...(query ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(query ? {} : { body: JSON.stringify(params) }),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

/** A token made on the dashboard's Tokens page: its secret, read where the page shows it once. */
async function tokenFromDashboard(page: Page, scope: string, projects: string[] = []): Promise<string> {
  // From another view, so the Tokens page is drawn afresh without the secret it showed last.
  await page.goto(`${base}/#/`);
  await page.waitForSelector('#add-project-link');
  await page.goto(`${base}/#/tokens`);
  await page.waitForSelector('#token-create');
  expect(await page.locator('#new-token').count()).toBe(0);
  await page.selectOption('#token-scope', scope);
  await page.fill('#token-projects', projects.join('\n'));
  await page.fill('#token-label', `${scope} token of the e2e test`);
  await page.click('#token-create button[type=submit]');
  const secret = await page.locator('#new-token code.secret').textContent({ timeout: 30_000 });
  expect(secret).toMatch(/^pw_/);
  return secret!;
}

let alice: Page;
let aliceSession: { cookie: string; csrf: string };
let ciToken: string;
let adminToken: string;

describe('teams: single sign-on, roles, scoped tokens, the audit log', () => {
  it("signs the admin in through the provider's own login page", async () => {
    alice = await signIn(ALICE);
    expect(await alice.textContent('#account')).toContain(ALICE.email);
    expect(await alice.textContent('#organisation')).toBe('acme (admin)');
    aliceSession = await sessionOf(alice);
  });

  it('adds a project from the dashboard, seen by the API in the organisation', async () => {
    await alice.goto(`${base}/#/add-project`);
    await alice.waitForSelector('#add-project');
    await alice.fill('#new-url', measured());
    await alice.check('#new-locations input[value=london]');
    await alice.uncheck('#new-devices input[value=mobile]');
    await alice.fill('#new-runs', '1');
    await alice.click('#add-project button[type=submit]');
    await alice.waitForSelector('#project-settings');
    const listed = await call(aliceSession, 'GET', 'projects');
    expect(listed.status).toBe(200);
    expect(listed.body['projects']).toEqual([
      expect.objectContaining({ url: measured(), locations: ['london'], devices: ['desktop'], runs: 1 }),
    ]);
    // A second project, made through the API with the session, that the ci token will not list.
    const made = await call(aliceSession, 'POST', 'projects', { url: other(), locations: ['london'] });
    expect(made.status).toBe(200);
  });

  it('makes tokens on the Tokens page; a ci token runs an update of its project, nothing else', async () => {
    ciToken = await tokenFromDashboard(alice, 'ci', [measured()]);
    adminToken = await tokenFromDashboard(alice, 'admin');
    const ci = { token: ciToken };

    const update = await call(ci, 'POST', 'update', { url: measured() });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    const cells = (update.body as { desktop?: { london?: { lighthouse?: { categories?: object } } } }).desktop;
    expect(cells?.london?.lighthouse?.categories).toBeDefined();

    // Another project of the organisation is as absent as one nobody has; settings are not a ci token's.
    const elsewhere = await call(ci, 'POST', 'update', { url: other() });
    expect(elsewhere.status).toBe(404);
    const settings = await call(ci, 'PATCH', 'projects', { url: measured(), runs: 3 });
    expect(settings.status).toBe(403);
    expect(errorEnvelopeSchema.parse(settings.body).status).toBe('FORBIDDEN');
    const budgets = await call(ci, 'POST', 'budgets', { url: measured(), budgets: { performance: 90 } });
    expect(budgets.status).toBe(403);
  }, 300_000);

  it('lets a viewer see the result and refuses every write, by the API and on the dashboard', async () => {
    const vera = await signIn(VERA);
    expect(await vera.textContent('#organisation')).toBe('acme (viewer)');
    // The project and its snapshot are there for her.
    await vera.goto(`${base}/`);
    await vera.click(`.project-link[href*="${encodeURIComponent(measured())}"]`);
    // The update the ci token ran, as its latest snapshot and a point of its trend.
    await vera.waitForSelector('#latest .latest');
    await vera.waitForSelector('figure[data-kpi="performance"] circle');
    const viewer = await sessionOf(vera);
    const snapshots = await call(viewer, 'GET', 'updates', { url: measured() });
    expect(snapshots.status).toBe(200);
    expect(JSON.stringify(snapshots.body)).toMatch(/desktop/);

    const writes: Array<[string, string, Record<string, unknown>]> = [
      ['POST', 'projects', { url: 'https://new.acme.test/', locations: ['london'] }],
      ['PATCH', 'projects', { url: measured(), runs: 3 }],
      ['DELETE', 'projects', { url: measured() }],
      ['POST', 'update', { url: measured() }],
      ['GET', 'update', { url: measured() }],
      ['POST', 'budgets', { url: measured(), budgets: { performance: 90 } }],
      ['POST', 'annotations', { url: measured(), text: 'deploy', date: '2026-11-26T10:00:00' }],
      ['POST', 'webhooks', { targetUrl: 'https://hooks.acme.test/perfwatch' }],
      ['POST', 'credentials', { url: measured(), clear: true }],
      ['PUT', 'projects/repository', { url: measured(), forge: 'github', repository: 'acme/shop' }],
      ['POST', 'tokens', { scope: 'read' }],
      ['PUT', 'members', { user: 'vera', role: 'admin' }],
    ];
    for (const [method, path, params] of writes) {
      const refused = await call(viewer, method, path, params);
      expect(refused.status, `${method} /v1/${path}: ${JSON.stringify(refused.body)}`).toBe(403);
      expect(errorEnvelopeSchema.parse(refused.body).status).toBe('FORBIDDEN');
    }
    // Nothing changed.
    const still = await call(aliceSession, 'GET', 'projects');
    expect((still.body['projects'] as Array<{ url: string; runs: number }>).map((p) => [p.url, p.runs])).toEqual(
      [
        [measured(), 1],
        [other(), 3],
      ].sort(),
    );

    // The dashboard says why, where she tried.
    await vera.goto(`${base}/#/project/settings?url=${encodeURIComponent(measured())}`);
    await vera.waitForSelector('#project-settings');
    await vera.fill('#edit-runs', '3');
    await vera.click('#project-settings button[type=submit]');
    await expect
      .poll(() => vera.locator('#project-settings').textContent())
      .toContain('Your role (viewer) cannot change this');
  });

  it('refuses a token once it has expired', async () => {
    const made = await call({ token: adminToken }, 'POST', 'tokens', { scope: 'read', expires: '3s' });
    expect(made.status).toBe(200);
    const token = made.body['token'] as string;
    expect((await call({ token }, 'GET', 'projects')).status).toBe(200);
    // Past the expiry the answer itself names, not a guessed wait.
    const expiresAt = Date.parse(made.body['expiresAt'] as string);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 50));
    const refused = await call({ token }, 'GET', 'projects');
    expect(refused.status).toBe(401);
    expect(errorEnvelopeSchema.parse(refused.body).message).toMatch(/expired/);
  });

  it('lists each change in the audit log with its actor, on the API and the dashboard', async () => {
    const answer = await call({ token: adminToken }, 'GET', 'audit-log', { limit: 200 });
    expect(answer.status).toBe(200);
    const log: AuditLogPage = auditLogPageSchema.parse(answer.body);
    // A person made by single sign-on is named by their verified email.
    const [aliceName, veraName] = [ALICE.email, VERA.email];
    const seen = log.entries.map((e) => [e.action, e.target, e.actor.name, e.actor.via] as const);
    expect(seen).toEqual(
      expect.arrayContaining([
        // Each joined acme at their first sign-in, as the provider's groups said.
        ['member.added', aliceName, aliceName, 'session'],
        ['member.added', veraName, veraName, 'session'],
        ['project.created', measured(), aliceName, 'session'],
        ['project.created', other(), aliceName, 'session'],
        ['token.created', expect.any(String), aliceName, 'session'],
        ['token.created', expect.any(String), aliceName, 'token'],
      ]),
    );
    // Nothing the viewer or the ci token was refused is there: vera's one entry is her joining.
    expect(log.entries.filter((e) => e.actor.name !== aliceName).map((e) => e.action)).toEqual(['member.added']);
    expect(JSON.stringify(log)).not.toContain(ciToken);

    await alice.goto(`${base}/#/audit-log`);
    await alice.waitForSelector('table.audit-log');
    const rows = await alice.$$eval('table.audit-log tr[data-action]', (trs) =>
      trs.map((tr) => [tr.getAttribute('data-action'), tr.children[1]?.textContent ?? '']),
    );
    expect(rows.length).toBe(log.entries.length);
    expect(rows).toContainEqual(['project.created', `${ALICE.email} · dashboard`]);
  });
});

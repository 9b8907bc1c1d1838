import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chromeFlags,
  createLighthouseRunner,
  startGuardProxy,
  type GuardProxy,
  type PageRunner,
} from '@perfwatch/agent';
import { createTargetGuard, flowSchema, parseAllowList } from '@perfwatch/common';
import { silentLogger } from '../support/test-services.ts';

// One Chrome serves many runs (PERFWATCH_RUNS_PER_BROWSER), of any project and user. A flow
// types into pages, so it can sign in to a site with its author's password: the session that
// sign-in leaves must not be there for the next run in that Chrome, another user's. Real
// Chromium and Lighthouse behind the guard, on a site that signs in whoever a form names.

let site: Server;
let siteUrl: string;
/** The Cookie header of each request for the home page, in order. */
const homeCookies: string[] = [];
let proxy: GuardProxy;
let runner: PageRunner;

const home = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>shop</title></head><body>
<h1>Shop</h1>
<form action="/login"><label>User <input id="user" name="user"></label><button type="submit">Sign in</button></form>
</body></html>`;

beforeAll(async () => {
  site = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/login') {
      const user = url.searchParams.get('user') ?? '';
      res.writeHead(200, {
        'Set-Cookie': `session=${encodeURIComponent(user)}; Path=/; Max-Age=3600; HttpOnly`,
        'Content-Type': 'text/html; charset=utf-8',
      });
      res.end(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>account</title></head><body><h1>Hello ${user}</h1></body></html>`,
      );
      return;
    }
    if (url.pathname === '/') homeCookies.push(req.headers.cookie ?? '');
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(home);
  });
  site.listen(0, '127.0.0.1');
  await once(site, 'listening');
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
  const guard = createTargetGuard({ allow: parseAllowList('127.0.0.1/32') });
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
  site?.close();
});

describe('flows in a Chrome that serves many runs', () => {
  it("leave no sign-in behind for the next run (another user's)", async () => {
    const signIn = flowSchema.parse({
      steps: [
        { kind: 'navigate', name: 'home', url: siteUrl },
        {
          kind: 'timespan',
          name: 'sign in',
          actions: [
            { action: 'type', selector: '#user', value: 'alice' },
            { action: 'click', text: 'Sign in' },
          ],
        },
      ],
    });
    await runner.run({ url: siteUrl, device: 'desktop', timeoutMs: 120_000, flow: signIn });
    const visit = flowSchema.parse({ steps: [{ kind: 'navigate', name: 'home', url: siteUrl }] });
    await runner.run({ url: siteUrl, device: 'desktop', timeoutMs: 120_000, flow: visit });
    // Each run loaded the home page; neither with a session, the second after alice's sign-in.
    expect(homeCookies.length).toBeGreaterThanOrEqual(2);
    expect(homeCookies.filter((cookie) => cookie.includes('session='))).toEqual([]);
  }, 180_000);
});

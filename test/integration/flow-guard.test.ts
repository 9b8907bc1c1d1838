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

// A user flow run by the agent's Lighthouse runner (real Chromium, real Lighthouse) behind its
// guard, allowed 127.0.0.1 only, on a page whose link, form and redirect lead to 127.0.0.2:
// the flow's clicks, its form's submit and a navigate step that redirects reach nothing there,
// and a navigate step naming the forbidden address is refused before Chrome goes. The same
// flow in a runner without the guard does reach the listener, so the check can fail.

const FORBIDDEN = '127.0.0.2';
const chromePath = process.env['CHROME_PATH'] ?? '/usr/bin/chromium';
const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });

let site: Server;
let siteUrl: string;
let trap: Server;
let trapUrl: string;
const reached: string[] = [];
let proxy: GuardProxy;
let guarded: PageRunner;

function page(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>flow guard</title></head><body>
<h1>Flow guard</h1>
<a id="out" href="${trapUrl}link">Leave</a>
<form method="post" action="${trapUrl}form"><label>Query <input id="q" name="q"></label><button type="submit">Send</button></form>
</body></html>`;
}

beforeAll(async () => {
  trap = createServer((req, res) => {
    reached.push(`${req.method} ${req.url}`);
    res.end('reached');
  });
  trap.listen(0, FORBIDDEN);
  await once(trap, 'listening');
  trapUrl = `http://${FORBIDDEN}:${(trap.address() as AddressInfo).port}/`;
  site = createServer((req, res) => {
    if (req.url === '/redirect') res.writeHead(302, { Location: `${trapUrl}redirected` }).end();
    else res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page());
  });
  site.listen(0, '127.0.0.1');
  await once(site, 'listening');
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
  const guard = createTargetGuard({ allow: parseAllowList('127.0.0.1/32') });
  proxy = await startGuardProxy({ guard, logger: silentLogger });
  guarded = createLighthouseRunner({
    chromePath,
    chromeFlags: flags,
    logger: silentLogger,
    runsPerBrowser: 1,
    guard: { guard, proxy },
  });
});

afterAll(async () => {
  await guarded?.close();
  await proxy?.close();
  site?.close();
  trap?.close();
});

/** Leaves by the link, comes back, posts the form, and audits what it sees. */
const leavingFlow = () =>
  flowSchema.parse({
    steps: [
      { kind: 'navigate', name: 'start', url: siteUrl },
      { kind: 'timespan', name: 'leave', actions: [{ action: 'click', selector: '#out' }] },
      { kind: 'navigate', name: 'back', url: siteUrl },
      {
        kind: 'timespan',
        name: 'post',
        actions: [
          { action: 'type', selector: '#q', value: 'hunter2' },
          { action: 'click', text: 'Send' },
        ],
      },
      { kind: 'snapshot', name: 'after' },
    ],
  });

const run = (runner: PageRunner, flow: ReturnType<typeof flowSchema.parse>) =>
  runner.run({ url: siteUrl, device: 'desktop', timeoutMs: 120_000, flow });

describe('a flow behind the target guard', () => {
  it("takes its clicks and its form's submit without reaching a forbidden address", async () => {
    reached.length = 0;
    const output = await run(guarded, leavingFlow());
    expect(output.steps?.map((step) => step.name)).toEqual(['start', 'leave', 'back', 'post', 'after']);
    expect(reached).toEqual([]);
  }, 150_000);

  it('does not follow a navigate step that redirects to a forbidden address', async () => {
    reached.length = 0;
    const flow = flowSchema.parse({
      steps: [
        { kind: 'navigate', name: 'start', url: siteUrl },
        { kind: 'navigate', name: 'hop', url: `${siteUrl}redirect` },
      ],
    });
    await expect(run(guarded, flow)).rejects.toMatchObject({
      code: 'FLOW_STEP_FAILED',
      message: expect.stringContaining('step 2 "hop": the page did not load'),
    });
    expect(reached).toEqual([]);
  }, 150_000);

  it('refuses a navigate step to a forbidden address before Chrome goes there', async () => {
    reached.length = 0;
    const flow = flowSchema.parse({
      steps: [
        { kind: 'navigate', name: 'start', url: siteUrl },
        { kind: 'navigate', name: 'metadata', url: `${trapUrl}latest/meta-data/` },
      ],
    });
    await expect(run(guarded, flow)).rejects.toMatchObject({
      code: 'TARGET_REFUSED',
      message: expect.stringContaining('step 2 "metadata"'),
    });
    expect(reached).toEqual([]);
  }, 150_000);

  it('reaches the listener from a runner without the guard (the check can fail)', async () => {
    reached.length = 0;
    const open = createLighthouseRunner({ chromePath, chromeFlags: flags, logger: silentLogger, runsPerBrowser: 1 });
    try {
      await run(open, leavingFlow());
    } finally {
      await open.close();
    }
    expect(reached).toEqual(expect.arrayContaining(['GET /link', 'POST /form']));
  }, 150_000);
});

import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed, vi } from 'vitest';
import { auditResultSchema, errorEnvelopeSchema } from '@perfwatch/common';
import { agentProcessUnderTest, type AgentUnderTest } from '../support/agent-process.ts';
import { chromesOf } from '../support/chrome-processes.ts';
import { startTestGateway, type TestGateway } from '../support/test-services.ts';

// Pages that misbehave, measured for real: an agent process (real Chromium and Lighthouse) and
// a gateway over a real nats-server, driven over HTTP the way a user would. What the user sees
// is asserted (a measurement, or the envelope with the reason) and so is what is left behind
// (the agent still serves, no Chrome beyond its warm one).

const SLOW_MS = 6_000;
/** The run timeout of a second gateway, for the page that never answers: the first one keeps the default. */
const SHORT_RUN_TIMEOUT_MS = 15_000;
const BIG_BYTES = 5 * 2 ** 20;

let site: Server;
let siteUrl: string;
const hanging = new Set<ServerResponse>();
/** Requests for the first URL of the redirect chain: one by Chrome, one by the agent's redirect probe. */
let loopStarts = 0;
let stack: AgentUnderTest;
let gateway: TestGateway;
let hasty: TestGateway;
let token: string;

function bigPage(): string {
  const paragraph =
    '<p>perfwatch fills this page with five megabytes of markup to see what an agent makes of it.</p>\n';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>big</title></head><body>${paragraph.repeat(Math.ceil(BIG_BYTES / paragraph.length))}</body></html>`;
}

beforeAll(async () => {
  const big = bigPage();
  const small =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>slow</title></head><body><h1>At last</h1></body></html>';
  site = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://site');
    const html = (body: string) =>
      res
        .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(body) })
        .end(body);
    if (url.pathname === '/slow') setTimeout(() => html(small), SLOW_MS);
    else if (url.pathname === '/hang') hanging.add(res);
    else if (url.pathname === '/loop') {
      if (url.search === '') loopStarts++;
      res.writeHead(302, { Location: `/loop?n=${Number(url.searchParams.get('n') ?? 0) + 1}` }).end();
    } else if (url.pathname === '/big') html(big);
    else res.writeHead(404).end();
  });
  site.listen(0, '127.0.0.1');
  await once(site, 'listening');
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

  stack = await agentProcessUnderTest({ PERFWATCH_LOCATION: 'sao_paulo', PERFWATCH_AGENT_ID: 'gru-faults' });
  gateway = await startTestGateway({ natsUrl: stack.natsUrl, runTimeoutMs: 120_000, replyTimeoutMs: 150_000 });
  hasty = await startTestGateway({
    natsUrl: stack.natsUrl,
    store: gateway.store,
    runTimeoutMs: SHORT_RUN_TIMEOUT_MS,
    replyTimeoutMs: SHORT_RUN_TIMEOUT_MS + 20_000,
  });
  ({ token } = await gateway.admin.createUser('faults'));
  for (const path of ['/slow', '/hang', '/loop', '/big'])
    await gateway.admin.addProject('faults', `${siteUrl}${path}`, { locations: ['sao_paulo'], runs: 1 });
  await vi.waitFor(() => expect(stack.registry.agents('sao_paulo')).toHaveLength(1), { timeout: 30_000 });
}, 90_000);

afterAll(async () => {
  await hasty?.stop();
  await gateway?.stop();
  await stack?.dispose();
  for (const res of hanging) res.destroy();
  site?.closeAllConnections();
  site?.close();
});

async function update(path: string, via = gateway): Promise<{ status: number; body: unknown; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${via.url}/v1/update?url=${encodeURIComponent(`${siteUrl}${path}`)}&device=mobile`, {
    headers: { Authorization: token },
  });
  return { status: res.status, body: await res.json(), ms: Date.now() - started };
}

/** The agent is alive, has at most its one warm Chrome, and measures a page that behaves. */
async function agentStillServes(): Promise<void> {
  expect(stack.agent.child.exitCode).toBeNull();
  const chromes = await chromesOf(stack.agent.child.pid!);
  expect(chromes.length).toBeLessThanOrEqual(1);
  for (const chrome of chromes) expect(chrome.browsers.length).toBeLessThanOrEqual(1);
}

beforeEach(() => {
  onTestFailed(() => console.error(`agent output:\n${stack.agent.output().slice(-6000)}`));
});

describe('misbehaving target pages', () => {
  it(`a page whose server answers after ${SLOW_MS / 1000} s is measured, its slowness in the result`, async () => {
    const { status, body } = await update('/slow');
    expect(status, JSON.stringify(body).slice(0, 400)).toBe(200);
    const cell = auditResultSchema.parse(body).mobile!.sao_paulo!;
    const lhr = cell.lighthouse as typeof cell.lighthouse & { audits: Record<string, { numericValue?: number }> };
    expect(lhr.audits['server-response-time']!.numericValue).toBeGreaterThanOrEqual(SLOW_MS - 500);
    await agentStillServes();
  }, 120_000);

  it('a page that redirects forever is a 502 naming the redirects, not retried', async () => {
    const { status, body } = await update('/loop');
    const envelope = errorEnvelopeSchema.parse(body);
    expect(status).toBe(502);
    expect(envelope.status).toBe('BAD_GATEWAY');
    expect(envelope.errors).toEqual([
      expect.stringMatching(
        /^mobile\/sao_paulo: the page redirects more than 20 times \(http:\/\/127\.0\.0\.1:\d+\/loop → .*\/loop\?n=1 → … → .*\/loop\?n=21\); Chrome showed its error page/,
      ),
    ]);
    // A page error is final: not offered again.
    expect(loopStarts).toBe(2);
    await agentStillServes();
  }, 120_000);

  it(`a page of ${BIG_BYTES / 2 ** 20} MB of HTML is measured, its size in the result`, async () => {
    const { status, body } = await update('/big');
    expect(status, JSON.stringify(body).slice(0, 400)).toBe(200);
    const cell = auditResultSchema.parse(body).mobile!.sao_paulo!;
    const lhr = cell.lighthouse as typeof cell.lighthouse & { audits: Record<string, { numericValue?: number }> };
    // The document's transfer size, from Lighthouse's network records.
    expect(lhr.audits['total-byte-weight']!.numericValue).toBeGreaterThanOrEqual(BIG_BYTES);
    expect(cell.lighthouse.elementCount).toBeGreaterThan(50_000);
    await agentStillServes();
  }, 180_000);

  it('a page that never answers is a 504 once the run timeout passed (tried twice), and its Chrome is not kept', async () => {
    const before = (await chromesOf(stack.agent.child.pid!)).map((c) => c.dir);
    const { status, body, ms } = await update('/hang', hasty);
    const envelope = errorEnvelopeSchema.parse(body);
    expect(status, JSON.stringify(body)).toBe(504);
    expect(envelope.status).toBe('GATEWAY_TIMEOUT');
    expect(envelope.errors).toEqual([`mobile/sao_paulo: the run took longer than ${SHORT_RUN_TIMEOUT_MS} ms`]);
    expect(ms).toBeGreaterThanOrEqual(2 * SHORT_RUN_TIMEOUT_MS);
    expect(hanging.size).toBe(2);
    // The Chrome that held the hung tab is gone; the agent starts afresh for the next page.
    const after = await chromesOf(stack.agent.child.pid!);
    expect(after.filter((c) => before.includes(c.dir))).toEqual([]);
    await agentStillServes();
    const next = await update('/slow');
    expect(next.status).toBe(200);
  }, 180_000);

  it('leaves no Chrome behind when the agent stops', async () => {
    expect(await stack.agent.stop('SIGTERM')).toBe(0);
    expect(await chromesOf(stack.agent.child.pid!)).toEqual([]);
  }, 60_000);
});

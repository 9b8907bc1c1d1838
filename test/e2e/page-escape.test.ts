import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createNatsDispatcher } from '@perfwatch/gateway';
import { agentProcessUnderTest, type AgentUnderTest } from '../support/agent-process.ts';
import { launchBrowser } from '../support/browser.ts';
import { silentLogger } from '../support/test-services.ts';

// A hostile page, measured by a real agent (Chromium and Lighthouse), tries to reach an address
// the agent may not: a WebSocket, a fetch and WebRTC (STUN over UDP) to 127.0.0.2, while only
// 127.0.0.1 is allowed. Nothing gets through. The same page in a Chromium without the agent's
// guard does reach it, so the listeners would see an escape.

const FORBIDDEN = '127.0.0.2';
let site: Server;
let siteUrl: string;
let trap: Server;
let udp: Socket;
const reached = { websocket: 0, http: 0, udp: 0 };
let stack: AgentUnderTest;

function page(trapPort: number, udpPort: number): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>escape</title></head><body><h1>escape</h1><script>
try { new WebSocket('ws://${FORBIDDEN}:${trapPort}/ws'); } catch {}
fetch('http://${FORBIDDEN}:${trapPort}/fetch', { mode: 'no-cors' }).catch(() => {});
(async () => {
  const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:${FORBIDDEN}:${udpPort}' }] });
  pc.createDataChannel('x');
  await pc.setLocalDescription(await pc.createOffer());
})().catch(() => {});
</script></body></html>`;
}

beforeAll(async () => {
  trap = createServer((_req, res) => {
    reached.http++;
    res.end('reached');
  });
  trap.on('upgrade', (_req, socket) => {
    reached.websocket++;
    socket.destroy();
  });
  trap.listen(0, FORBIDDEN);
  await once(trap, 'listening');
  udp = createSocket('udp4');
  udp.on('message', () => void reached.udp++);
  udp.bind(0, FORBIDDEN);
  await once(udp, 'listening');
  const html = page((trap.address() as AddressInfo).port, udp.address().port);
  site = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(html));
  site.listen(0, '127.0.0.1');
  await once(site, 'listening');
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
  stack = await agentProcessUnderTest({
    PERFWATCH_LOCATION: 'london',
    PERFWATCH_AGENT_ID: 'lon-escape',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.1/32',
  });
  await vi.waitFor(() => expect(stack.registry.agents('london')).toHaveLength(1), { timeout: 30_000 });
}, 90_000);

afterAll(async () => {
  await stack?.dispose();
  site?.close();
  trap?.close();
  udp?.close();
});

describe('a page that tries to leave the target guard', () => {
  it('reaches nothing from the agent: no WebSocket, no request, no WebRTC packet', async () => {
    const dispatcher = createNatsDispatcher({ nc: stack.nc, logger: silentLogger, registry: stack.registry });
    const job = {
      jobId: 'escape-1',
      updateId: 'escape',
      url: siteUrl,
      device: 'desktop' as const,
      location: 'london' as const,
      runIndex: 0,
      timeoutMs: 120_000,
    };
    const outcome = await dispatcher.dispatch(job, { timeoutMs: 150_000, requestId: 'escape-1' });
    expect(outcome.ok, JSON.stringify(outcome).slice(0, 300)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(reached).toEqual({ websocket: 0, http: 0, udp: 0 });
  }, 180_000);

  it('does reach the listeners from a Chromium without the guard (the check can fail)', async () => {
    const browser = await launchBrowser();
    try {
      const tab = await browser.newPage();
      await tab.goto(siteUrl);
      await vi.waitFor(() => expect(reached.websocket + reached.http).toBeGreaterThan(0), { timeout: 10_000 });
      await vi.waitFor(() => expect(reached.udp).toBeGreaterThan(0), { timeout: 10_000 });
    } finally {
      await browser.close();
    }
  }, 60_000);
});

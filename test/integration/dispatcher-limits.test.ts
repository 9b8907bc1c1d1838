import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { describe, expect, inject, it, vi } from 'vitest';
import type { AuditJob } from '@perfwatch/common';
import { startAgent } from '@perfwatch/agent';
import { createNatsDispatcher, startAgentRegistry } from '@perfwatch/gateway';
import { freePort, startNatsServer } from '../support/local-servers.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { natsWithClient, silentLogger } from '../support/test-services.ts';

// The gateway's dispatcher under pressure, over a real nats-server: it keeps a bounded number
// of offers in flight, and it does not wait out the run timeout for a reply its connection lost.

const job = (n: number): AuditJob => ({
  jobId: `limits-${n}`,
  updateId: 'limits',
  url: 'http://fixture.test/',
  device: 'mobile',
  location: 'frankfurt',
  runIndex: n,
  timeoutMs: 60_000,
});

describe('dispatcher limits', () => {
  it('keeps at most maxInFlight offers awaiting replies; the rest wait in the gateway and are counted as waiting', async () => {
    const { nats, client, dispose } = await natsWithClient();
    const agentConn = await connect({ servers: nats.url });
    const runner = fixtureRunner({ delayMs: 300 });
    const agent = startAgent({
      nc: agentConn,
      location: 'frankfurt',
      runner,
      logger: silentLogger,
      agentId: 'fra-wide',
      capacity: 10,
    });
    const registry = await startAgentRegistry({ nc: client, logger: silentLogger });
    try {
      await vi.waitFor(() => expect(registry.agents('frankfurt')).toHaveLength(1));
      const dispatcher = createNatsDispatcher({ nc: client, logger: silentLogger, registry, maxInFlight: 3 });
      const runs = Promise.all(
        Array.from({ length: 9 }, (_, n) =>
          dispatcher.dispatch(job(n), { timeoutMs: 30_000, requestId: `limits-${n}` }),
        ),
      );
      // Three go out, six wait (seen well before the first reply, 300 ms later, can come).
      await vi.waitFor(() => expect(dispatcher.waiting?.('frankfurt')).toBe(6), { timeout: 250, interval: 5 });
      await vi.waitFor(() => expect(runner.requests.length).toBeGreaterThan(0));
      const outcomes = await runs;
      expect(outcomes.every((o) => o.ok)).toBe(true);
      // The agent had room for 10; the gateway never had more than 3 offers out.
      expect(runner.maxConcurrent).toBe(3);
      expect(dispatcher.waiting?.('frankfurt')).toBe(0);
    } finally {
      await registry.stop();
      await agent.stop();
      await agentConn.drain();
      await dispose();
    }
  });

  it('offers a run again when the connection drops with its reply outstanding, instead of waiting out the timeout', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-nats-drop-'));
    const port = await freePort();
    let server = await startNatsServer({ binary: inject('natsServerBinary'), dir, port });
    const options = { servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 };
    const [gatewayConn, agentConn] = await Promise.all([connect(options), connect(options)]);
    const runner = fixtureRunner({ delayMs: 1_500 });
    const agent = startAgent({
      nc: agentConn,
      location: 'frankfurt',
      runner,
      logger: silentLogger,
      agentId: 'fra-drop',
      announceIntervalMs: 200,
    });
    const registry = await startAgentRegistry({ nc: gatewayConn, logger: silentLogger });
    try {
      await vi.waitFor(() => expect(registry.agents('frankfurt')).toHaveLength(1));
      const dispatcher = createNatsDispatcher({ nc: gatewayConn, logger: silentLogger, registry });
      const started = Date.now();
      const run = dispatcher.dispatch(job(0), { timeoutMs: 60_000, requestId: 'drop' });
      await vi.waitFor(() => expect(runner.requests).toHaveLength(1));
      // The server goes away with the run's reply outstanding and comes back at once.
      await server.stop();
      server = await startNatsServer({ binary: inject('natsServerBinary'), dir, port });
      const outcome = await run;
      expect(outcome.ok, JSON.stringify(outcome)).toBe(true);
      // Offered again once both sides were back: a second run, not a minute's wait.
      expect(runner.requests).toHaveLength(2);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await registry.stop();
      await agent.stop();
      await Promise.all([gatewayConn.close(), agentConn.close()]);
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

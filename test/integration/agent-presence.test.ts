import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  agentAnnounceSubject,
  auditResultSchema,
  encodeAnnouncement,
  encodeReply,
  HEADERS,
  PERFWATCH_VERSION,
  type AuditJob,
} from '@perfwatch/common';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { RunFailure, startAgent, type Agent } from '@perfwatch/agent';
import { createNatsDispatcher, startAgentRegistry } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { natsWithClient, silentLogger, startTestGateway } from '../support/test-services.ts';

// Agents announce themselves over a real nats-server; the gateway's registry knows which
// locations are served, fails a location with no live agent at once, and sends a retry to
// another agent than the one that failed.
let stack: Awaited<ReturnType<typeof natsWithClient>>;
let nats: Awaited<ReturnType<typeof natsWithClient>>['nats'];
let client: NatsConnection;
beforeAll(async () => {
  stack = await natsWithClient();
  ({ nats, client } = stack);
});
afterAll(async () => {
  await stack?.dispose();
});

function gzipHeaders() {
  const h = natsHeaders();
  h.set(HEADERS.contentEncoding, 'gzip');
  return h;
}

const job = (over: Partial<AuditJob> = {}): AuditJob => ({
  jobId: `j-${Math.random()}`,
  updateId: 'u',
  url: 'http://fixture.test/',
  device: 'mobile',
  location: 'tokyo',
  runIndex: 0,
  timeoutMs: 5000,
  ...over,
});

describe('agent presence', () => {
  it('finds agents that started before the gateway, follows how busy they are, and forgets one that says goodbye', async () => {
    const nc = await connect({ servers: nats.url });
    const runner = fixtureRunner({ delayMs: 300 });
    const agent = startAgent({
      nc,
      location: 'london',
      runner,
      logger: silentLogger,
      agentId: 'lon-early',
      capacity: 2,
      announceIntervalMs: 60_000,
    });
    await nc.flush();
    // Started after the agent, and the agent announces only once a minute: discovery finds it.
    const registry = await startAgentRegistry({ nc: client, logger: silentLogger });
    try {
      await vi.waitFor(() =>
        expect(registry.agents('london')).toEqual([
          {
            agentId: 'lon-early',
            instance: expect.stringMatching(/^[A-Za-z0-9_-]{16,64}$/),
            location: 'london',
            version: PERFWATCH_VERSION,
            capacity: 2,
            busy: 0,
            running: [],
            state: 'ready',
            intervalMs: 60_000,
          },
        ]),
      );
      const dispatcher = createNatsDispatcher({ nc: client, logger: silentLogger, registry });
      const running = dispatcher.dispatch(job({ location: 'london' }), { timeoutMs: 5_000, requestId: 'busy' });
      await vi.waitFor(() =>
        expect(registry.agents('london')?.[0]).toMatchObject({ busy: 1, running: [expect.any(String)] }),
      );
      expect((await running).ok).toBe(true);
      await vi.waitFor(() => expect(registry.agents('london')?.[0]?.busy).toBe(0));
      await agent.stop();
      await vi.waitFor(() => expect(registry.agents('london')).toEqual([]));
    } finally {
      await agent.stop();
      await nc.drain();
      await registry.stop();
    }
  });

  it('reports a location whose only agent went silent at once, not after the reply timeout', async () => {
    const registry = await startAgentRegistry({ nc: client, logger: silentLogger, settleMs: 50 });
    // A frozen agent: subscribed (NATS still routes jobs to it) but neither answering nor announcing.
    const frozen = await connect({ servers: nats.url });
    frozen.subscribe('perfwatch.audit.v1.sao_paulo', { queue: 'perfwatch-agents.sao_paulo' });
    // Claiming a location on another location's subject is not believed (permissions vouch for subjects).
    frozen.publish(
      agentAnnounceSubject('tokyo'),
      encodeAnnouncement({
        agentId: 'sp-liar',
        location: 'sao_paulo',
        version: '1.0.0',
        capacity: 1,
        busy: 0,
        state: 'ready',
        intervalMs: 60_000,
      }),
    );
    frozen.publish(
      agentAnnounceSubject('sao_paulo'),
      encodeAnnouncement({
        agentId: 'sp-frozen',
        location: 'sao_paulo',
        version: '1.0.0',
        capacity: 1,
        busy: 0,
        state: 'ready',
        intervalMs: 100,
      }),
    );
    await frozen.flush();
    try {
      await vi.waitFor(() => expect(registry.agents('sao_paulo')?.map((a) => a.agentId)).toEqual(['sp-frozen']));
      expect(registry.all().map((a) => a.agentId)).toEqual(['sp-frozen']);
      // Three missed announcements later it is gone.
      await vi.waitFor(() => expect(registry.agents('sao_paulo')).toEqual([]), { timeout: 2_000 });
      const dispatcher = createNatsDispatcher({ nc: client, logger: silentLogger, registry });
      const started = performance.now();
      const outcome = await dispatcher.dispatch(job({ location: 'sao_paulo' }), {
        timeoutMs: 10_000,
        requestId: 'frozen',
      });
      expect(outcome).toMatchObject({ ok: false, error: { code: 'NO_RESPONDERS' } });
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      await frozen.close();
      await registry.stop();
    }
  });

  it('still serves a location whose agents do not announce themselves (agents of v1.0)', async () => {
    const registry = await startAgentRegistry({ nc: client, logger: silentLogger, settleMs: 50 });
    const old = await connect({ servers: nats.url });
    old.subscribe('perfwatch.audit.v1.los_angeles', {
      queue: 'perfwatch-agents.los_angeles',
      callback: (_error, msg) =>
        void encodeReply({
          ok: false,
          error: { code: 'PAGE_LOAD_FAILED', message: 'answered by a v1.0 agent', retryable: false },
        }).then((data) => msg.respond(data, { headers: gzipHeaders() })),
    });
    await old.flush();
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(registry.agents('los_angeles')).toEqual([]);
      const dispatcher = createNatsDispatcher({ nc: client, logger: silentLogger, registry });
      const outcome = await dispatcher.dispatch(job({ location: 'los_angeles' }), {
        timeoutMs: 5_000,
        requestId: 'v1.0',
      });
      expect(outcome).toMatchObject({
        ok: false,
        error: { code: 'PAGE_LOAD_FAILED', message: 'answered by a v1.0 agent' },
      });
    } finally {
      await old.close();
      await registry.stop();
    }
  });

  it('retries a failed run once, on another agent of the location', async () => {
    const gateway = await startTestGateway({ natsUrl: nats.url, replyTimeoutMs: 10_000 });
    const conns = await Promise.all([connect({ servers: nats.url }), connect({ servers: nats.url })]);
    const broken = fixtureRunner({ delayMs: 20, fail: () => new RunFailure('BROWSER_FAILED', 'Chrome crashed', true) });
    const healthy = fixtureRunner({ delayMs: 20 });
    const agents: Agent[] = [
      startAgent({ nc: conns[0]!, location: 'frankfurt', runner: broken, logger: silentLogger, agentId: 'fra-broken' }),
      startAgent({
        nc: conns[1]!,
        location: 'frankfurt',
        runner: healthy,
        logger: silentLogger,
        agentId: 'fra-healthy',
      }),
    ];
    try {
      await vi.waitFor(() => expect(gateway.runtime.agents.agents('frankfurt')).toHaveLength(2));
      const { token } = await gateway.admin.createUser('retry');
      await gateway.admin.addProject('retry', 'https://retry.example/', { locations: ['frankfurt'], runs: 3 });
      for (let update = 0; update < 3; update++) {
        const res = await fetch(`${gateway.url}/v1/update?url=https://retry.example/&device=mobile`, {
          headers: { Authorization: token },
        });
        expect(res.status).toBe(200);
        const runs = auditResultSchema.parse(await res.json()).mobile!.frankfurt!.runs;
        // Every run succeeded, whichever agent it went to first: the failed ones went to the other agent.
        expect(runs).toHaveLength(3);
        expect(new Set(runs.map((r) => r.agentId))).toEqual(new Set(['fra-healthy']));
      }
      // The broken agent was offered runs (and failed them); the healthy one did all nine.
      expect(broken.requests.length).toBeGreaterThan(0);
      expect(healthy.requests).toHaveLength(9);
    } finally {
      for (const agent of agents) await agent.stop();
      for (const nc of conns) await nc.drain();
      await gateway.stop();
    }
  });
});

import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gunzipSync } from 'node:zlib';
import {
  decodeJob,
  decodeReply,
  digestRun,
  encodeAnnouncement,
  encodeJob,
  encodeReply,
  HEADERS,
  lighthouseResultSchema,
  receiveReply,
  type AuditJob,
} from '@perfwatch/common';
import { buildLocationSnapshot } from '../../gateway/src/updates/snapshot-builder.ts';
import { startAgent } from '@perfwatch/agent';
import { createNatsDispatcher, startAgentRegistry } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { natsWithClient, silentLogger } from '../support/test-services.ts';

// Agents over a real nats-server: the queue group, the reply contract, shutdown.
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

async function request(subject: string, data: Uint8Array, requestId = 'req-1') {
  const h = natsHeaders();
  h.set(HEADERS.requestId, requestId);
  const msg = await client.request(subject, data, { timeout: 5000, headers: h });
  return {
    reply: await decodeReply(msg.data, msg.headers?.get(HEADERS.contentEncoding)),
    requestId: msg.headers?.get(HEADERS.requestId),
  };
}

/**
 * A request to an agent of capacity 1 just after its last reply: it leaves its queue group while
 * it runs and rejoins after replying, so the next job may find no responder for a moment. Asked
 * again on "no responders" only, for as long as a request may take.
 */
async function whenServing<T>(request: () => Promise<T>, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await request();
    } catch (error) {
      if (!/no responders/i.test(String(error)) || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('agent', () => {
  it('echoes the request id, and leaves the queue group while at capacity, so a job offered meanwhile finds no responder', async () => {
    const nc = await connect({ servers: nats.url });
    const runner = fixtureRunner({ delayMs: 300 });
    const agent = startAgent({ nc, location: 'sao_paulo', runner, logger: silentLogger, agentId: 'sp-1' });
    try {
      await nc.flush();
      const first = request('perfwatch.audit.v1.sao_paulo', encodeJob(job({ location: 'sao_paulo' })), 'req-a');
      await new Promise((r) => setTimeout(r, 50));
      expect(agent.busy).toBe(1);
      await expect(
        request('perfwatch.audit.v1.sao_paulo', encodeJob(job({ location: 'sao_paulo' })), 'req-b'),
      ).rejects.toThrow(/no responders/i);
      expect((await first).reply.ok).toBe(true);
      expect((await first).requestId).toBe('req-a');
      // A run ended: back in the queue group.
      await nc.flush();
      expect(
        (await request('perfwatch.audit.v1.sao_paulo', encodeJob(job({ location: 'sao_paulo' })), 'req-c')).reply.ok,
      ).toBe(true);
      expect(runner.requests).toHaveLength(2);
    } finally {
      await agent.stop();
      await nc.drain();
    }
  });

  it("spreads a location's jobs over its agents, one run at a time each, through the gateway's dispatcher", async () => {
    const conns = await Promise.all([connect({ servers: nats.url }), connect({ servers: nats.url })]);
    const runners = [fixtureRunner({ delayMs: 40 }), fixtureRunner({ delayMs: 40 })];
    const registry = await startAgentRegistry({ nc: client, logger: silentLogger });
    const agents = conns.map((nc, i) =>
      startAgent({ nc, location: 'tokyo', runner: runners[i]!, logger: silentLogger, agentId: `tokyo-${i}` }),
    );
    const dispatcher = createNatsDispatcher({
      nc: client,
      logger: silentLogger,
      registry,
      offerAgainMs: { min: 10, max: 50 },
    });
    try {
      await Promise.all(conns.map((nc) => nc.flush()));
      await vi.waitFor(() => expect(registry.agents('tokyo')).toHaveLength(2));
      const outcomes = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          dispatcher.dispatch(job({ runIndex: i % 3 }), { timeoutMs: 10_000, requestId: `req-${i}` }),
        ),
      );
      expect(outcomes.filter((o) => !o.ok)).toEqual([]);
      const agentIds = outcomes.map((o) => (o.ok ? o.result.agentId : ''));
      expect(new Set(agentIds)).toEqual(new Set(['tokyo-0', 'tokyo-1']));
      expect(runners[0]!.requests.length + runners[1]!.requests.length).toBe(12);
      expect(Math.max(runners[0]!.maxConcurrent, runners[1]!.maxConcurrent)).toBe(1);
    } finally {
      for (const agent of agents) await agent.stop();
      for (const nc of conns) await nc.drain();
      await registry.stop();
    }
  });

  it('runs up to its capacity at once, and no more', async () => {
    const nc = await connect({ servers: nats.url });
    const runner = fixtureRunner({ delayMs: 150 });
    const registry = await startAgentRegistry({ nc: client, logger: silentLogger });
    const agent = startAgent({
      nc,
      location: 'los_angeles',
      runner,
      logger: silentLogger,
      agentId: 'la-wide',
      capacity: 3,
    });
    const dispatcher = createNatsDispatcher({
      nc: client,
      logger: silentLogger,
      registry,
      offerAgainMs: { min: 10, max: 50 },
    });
    try {
      await vi.waitFor(() =>
        expect(registry.agents('los_angeles')).toMatchObject([{ agentId: 'la-wide', capacity: 3, busy: 0 }]),
      );
      const started = performance.now();
      // Sampled every few milliseconds: on a loaded machine a polling wait can miss the first wave.
      let mostWaiting = 0;
      const sampler = setInterval(
        () => (mostWaiting = Math.max(mostWaiting, dispatcher.waiting?.('los_angeles') ?? 0)),
        5,
      );
      const pending = Promise.all(
        Array.from({ length: 9 }, (_, i) =>
          dispatcher.dispatch(job({ location: 'los_angeles', runIndex: i }), {
            timeoutMs: 10_000,
            requestId: `cap-${i}`,
          }),
        ),
      );
      const outcomes = await pending.finally(() => clearInterval(sampler));
      // Three run, six wait: the queue depth operators see.
      expect(mostWaiting).toBe(6);
      const ms = performance.now() - started;
      expect(dispatcher.waiting?.('los_angeles')).toBe(0);
      expect(outcomes.filter((o) => !o.ok)).toEqual([]);
      expect(runner.maxConcurrent).toBe(3);
      // Three waves of 150 ms: a freed runner is taken at once (the agent announces room), not after a backoff.
      expect(ms).toBeLessThan(9 * 150);
    } finally {
      await agent.stop();
      await nc.drain();
      await registry.stop();
    }
  });

  it("an offer lost on its way (the region's agent had just left the queue group) is offered again within seconds, not at its reply deadline", async () => {
    // What a region's server does with a job that arrives just after its agent left the queue
    // group: nothing. The hub saw interest, so the gateway hears no "no responders" either.
    const hole = await connect({ servers: nats.url });
    const swallowed: string[] = [];
    const sink = hole.subscribe('perfwatch.audit.v1.london', {
      queue: 'perfwatch-agents.london',
      callback: (_error, msg) => {
        swallowed.push(decodeJob(msg.data).jobId);
        void sink.drain();
      },
    });
    await hole.flush();
    const registry = await startAgentRegistry({ nc: client, logger: silentLogger });
    const nc = await connect({ servers: nats.url });
    const runner = fixtureRunner({ delayMs: 50 });
    let agent: ReturnType<typeof startAgent> | undefined;
    const dispatcher = createNatsDispatcher({ nc: client, logger: silentLogger, registry, takenWithinMs: 1_000 });
    try {
      hole.publish(
        'perfwatch.agents.v1.announce.london',
        encodeAnnouncement({
          agentId: 'london-hole',
          instance: 'hole-instance-0001',
          location: 'london',
          version: '0.1.0',
          capacity: 1,
          busy: 0,
          running: [],
          state: 'ready',
          intervalMs: 60_000,
        }),
      );
      await vi.waitFor(() => expect(registry.agents('london')).toHaveLength(1));
      const started = performance.now();
      const outcome = dispatcher.dispatch(job({ location: 'london', timeoutMs: 60_000 }), {
        timeoutMs: 90_000,
        requestId: 'lost-1',
      });
      await vi.waitFor(() => expect(swallowed).toHaveLength(1));
      agent = startAgent({ nc, location: 'london', runner, logger: silentLogger, agentId: 'london-real' });
      const settled = await outcome;
      const ms = performance.now() - started;
      expect(settled.ok && settled.result.agentId).toBe('london-real');
      // The same job, offered again: run once, by the agent that took it.
      expect(settled.ok && settled.result.jobId).toBe(swallowed[0]);
      expect(runner.requests).toHaveLength(1);
      // Reply deadline 60 s + grace; the lost offer cost about the 1 s wait for the agent to say it took it.
      expect(ms).toBeLessThan(15_000);
    } finally {
      await agent?.stop();
      await nc.drain();
      await hole.drain();
      await registry.stop();
    }
  });

  it("answers a v1.6 job in two parts: the run's digest as plain JSON, then its result as the gzip a store keeps", async () => {
    const nc = await connect({ servers: nats.url });
    const agent = startAgent({
      nc,
      location: 'los_angeles',
      runner: fixtureRunner(),
      logger: silentLogger,
      agentId: 'la-parts',
    });
    try {
      await nc.flush();
      const h = natsHeaders();
      h.set(HEADERS.requestId, 'parts');
      const msg = await client.request(
        'perfwatch.audit.v1.los_angeles',
        encodeJob({ ...job({ location: 'los_angeles' }), digest: true, plainDigest: true }),
        { timeout: 5000, headers: h },
      );
      const parts = msg.headers?.get(HEADERS.replyParts);
      expect(parts).toMatch(/^\d+$/);
      expect(msg.headers?.get(HEADERS.digestEncoding)).toBe('identity');
      expect(JSON.parse(Buffer.from(msg.data.subarray(0, Number(parts))).toString('utf8')).ok).toBe(true);
      const layout = (m: typeof msg) => ({
        contentEncoding: m.headers?.get(HEADERS.contentEncoding) || undefined,
        parts: m.headers?.get(HEADERS.replyParts) || undefined,
        digestEncoding: m.headers?.get(HEADERS.digestEncoding) || undefined,
      });
      const received = await receiveReply(msg.data, layout(msg));
      if (!received.ok || !('lighthouseGzip' in received)) throw new Error('not a two-part reply');
      const lhr = lighthouseResultSchema.parse(JSON.parse(gunzipSync(received.lighthouseGzip).toString('utf8')));
      expect(lhr.requestedUrl).toBe('http://fixture.test/');
      expect(received.result.digest).toEqual(JSON.parse(JSON.stringify(digestRun(lhr))));
      // A v1.5 job (a gateway before v1.6) gets the digest gzipped, and no encoding header.
      // The agent rejoins its queue group after each reply: each next job waits for it.
      const gzipped = await whenServing(() =>
        client.request(
          'perfwatch.audit.v1.los_angeles',
          encodeJob({ ...job({ location: 'los_angeles' }), digest: true }),
          { timeout: 5000 },
        ),
      );
      expect(gzipped.headers?.get(HEADERS.digestEncoding)).toBe('');
      expect([...gzipped.data.subarray(0, 2)]).toEqual([0x1f, 0x8b]);
      const fromV15 = await receiveReply(gzipped.data, layout(gzipped));
      expect(fromV15.ok && 'lighthouseGzip' in fromV15 && fromV15.result.digest.kpis.length).toBe(
        received.result.digest.kpis.length,
      );
      // A job without the flag (a gateway before v1.5) still gets the whole result in one part.
      const whole = await whenServing(() =>
        client.request('perfwatch.audit.v1.los_angeles', encodeJob(job({ location: 'los_angeles' })), {
          timeout: 5000,
        }),
      );
      expect(whole.headers?.get(HEADERS.replyParts)).toBe('');
      expect((await decodeReply(whole.data, 'gzip')).ok).toBe(true);
    } finally {
      await agent.stop();
      await nc.drain();
    }
  });

  it('a gateway reads an agent before v1.5, which sends the whole result, as it reads a v1.5 one', async () => {
    const old = await connect({ servers: nats.url });
    const lhr = loadLhr('desktop', 2);
    old.subscribe('perfwatch.audit.v1.frankfurt', {
      queue: 'perfwatch-agents.frankfurt',
      callback: (_error, msg) => {
        const asked = decodeJob(msg.data);
        const h = natsHeaders();
        h.set(HEADERS.contentEncoding, 'gzip');
        void encodeReply({
          ok: true,
          result: {
            jobId: asked.jobId,
            agentId: 'fra-old',
            location: 'frankfurt',
            device: asked.device,
            runIndex: asked.runIndex,
            startedAt: new Date().toISOString(),
            lighthouseMs: 5,
            lhr,
          },
        }).then((data) => msg.respond(data, { headers: h }));
      },
    });
    await old.flush();
    const dispatcher = createNatsDispatcher({ nc: client, logger: silentLogger });
    try {
      const outcome = await dispatcher.dispatch(job({ location: 'frankfurt', device: 'desktop' }), {
        timeoutMs: 5_000,
        requestId: 'old',
      });
      if (!outcome.ok) throw new Error(outcome.error.message);
      expect(outcome.result.digest).toEqual(digestRun(lhr));
      expect(await outcome.result.lighthouse.read()).toEqual(lhr);
      const cell = await buildLocationSnapshot('desktop', 'frankfurt', [outcome.result]);
      expect(cell.kpis.length).toBeGreaterThan(5);
      expect(JSON.parse(gunzipSync(await cell.lighthouse.gzip()).toString('utf8'))).toEqual(lhr);
    } finally {
      await old.drain();
    }
  });

  it('answers a malformed job or one for another location with BAD_JOB, and keeps serving', async () => {
    const nc = await connect({ servers: nats.url });
    const runner = fixtureRunner();
    const agent = startAgent({ nc, location: 'london', runner, logger: silentLogger, agentId: 'london-1' });
    try {
      await nc.flush();
      const garbage = await request('perfwatch.audit.v1.london', new TextEncoder().encode('{"jobId": 1'));
      expect(garbage.reply).toMatchObject({ ok: false, error: { code: 'BAD_JOB', retryable: false } });
      const elsewhere = await request('perfwatch.audit.v1.london', encodeJob(job({ location: 'tokyo' })));
      expect(elsewhere.reply).toMatchObject({ ok: false, error: { code: 'BAD_JOB' } });
      expect(runner.requests).toHaveLength(0);
      const good = await request(
        'perfwatch.audit.v1.london',
        encodeJob(job({ location: 'london', device: 'desktop' })),
      );
      expect(good.reply.ok).toBe(true);
      expect(good.reply.ok && good.reply.result.lhr.configSettings?.formFactor).toBe('desktop');
    } finally {
      await agent.stop();
      await nc.drain();
    }
  });

  it('on stop, finishes the run in progress; jobs offered meanwhile are handed back as retryable', async () => {
    const nc = await connect({ servers: nats.url });
    const runner = fixtureRunner({ delayMs: 400 });
    const agent = startAgent({ nc, location: 'frankfurt', runner, logger: silentLogger, agentId: 'fra-1' });
    await nc.flush();
    const first = request('perfwatch.audit.v1.frankfurt', encodeJob(job({ location: 'frankfurt', runIndex: 0 })));
    await new Promise((r) => setTimeout(r, 150));
    const stopped = agent.stop();
    // Offered while the agent stops: handed back (it may still be subscribed) or no responder at all.
    const meanwhile = await Promise.allSettled(
      [1, 2].map((i) =>
        request('perfwatch.audit.v1.frankfurt', encodeJob(job({ location: 'frankfurt', runIndex: i }))),
      ),
    );
    await stopped;
    expect((await first).reply.ok).toBe(true);
    await nc.drain();
    for (const outcome of meanwhile) {
      if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/no responders/i);
      else
        expect(outcome.value.reply).toMatchObject({
          ok: false,
          error: { code: expect.stringMatching(/^AGENT_(BUSY|SHUTTING_DOWN)$/), retryable: true },
        });
    }
    expect(runner.requests).toHaveLength(1);
  });

  it('shrinks a result past the NATS payload limit until it fits, or refuses it by name', async () => {
    // 1.5 MB of incompressible bytes: past the server's 1 MB max_payload even gzip-compressed.
    const noise = randomBytes(1_500_000).toString('base64');
    const huge = (auditId: string) => {
      const lhr = loadLhr('mobile', 1);
      lhr.audits[auditId] = {
        ...(lhr.audits[auditId] ?? { id: auditId, score: null }),
        details: { type: 'debugdata', noise },
      };
      return lhr;
    };
    const nc = await connect({ servers: nats.url });
    let next = huge('script-treemap-data');
    const agent = startAgent({
      nc,
      location: 'los_angeles',
      runner: { run: async () => ({ lhr: next, lighthouseMs: 1 }), close: async () => {} },
      logger: silentLogger,
      agentId: 'la-big',
    });
    try {
      await nc.flush();
      const shrunk = await request('perfwatch.audit.v1.los_angeles', encodeJob(job({ location: 'los_angeles' })));
      expect(shrunk.reply.ok).toBe(true);
      const lhr = shrunk.reply.ok ? shrunk.reply.result.lhr : null;
      expect(lhr!.audits['script-treemap-data']!.details).toBeUndefined();
      expect(lhr!.audits['first-contentful-paint']).toEqual(loadLhr('mobile', 1).audits['first-contentful-paint']);
      expect(lhr!.categories).toEqual(loadLhr('mobile', 1).categories);
      expect(String(lhr!['runWarnings'])).toMatch(/shrunk to fit.*script-treemap-data/);

      // Details perfwatch reads are never dropped: such a result is refused, by name.
      next = huge('network-requests');
      const refused = await request('perfwatch.audit.v1.los_angeles', encodeJob(job({ location: 'los_angeles' })));
      expect(refused.reply).toMatchObject({ ok: false, error: { code: 'RESULT_TOO_LARGE', retryable: false } });
    } finally {
      await agent.stop();
      await nc.drain();
    }
  });
});

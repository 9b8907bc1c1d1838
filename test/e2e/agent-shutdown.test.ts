import { once } from 'node:events';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createNatsDispatcher, type AgentRegistry } from '@perfwatch/gateway';
import { agentProcessUnderTest, type AgentUnderTest } from '../support/agent-process.ts';
import { chromesOf } from '../support/chrome-processes.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { silentLogger } from '../support/test-services.ts';

// SIGTERM to an agent in the middle of a real Lighthouse run: it turns unready and says
// goodbye at once, takes no more work, finishes the run and replies, then exits 0 with its
// Chrome gone. An idle agent (its Chrome warm from an earlier run) is gone within 2 s.

let stack: AgentUnderTest;
let nc: NatsConnection;
let registry: AgentRegistry;
let agent: PerfwatchProcess;

beforeAll(async () => {
  stack = await agentProcessUnderTest({
    PERFWATCH_LOCATION: 'frankfurt',
    PERFWATCH_AGENT_ID: 'fra-stopping',
    OPS_HOST: '127.0.0.1',
  });
  ({ nc, registry, agent } = stack);
});

afterAll(async () => {
  await stack?.dispose();
});

describe('agent shutdown', () => {
  it('on SIGTERM mid-run: unready and gone from the registry at once, the run finished and answered, no Chrome left', async () => {
    const ops = (await agent.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"ops server listening/))[1]!;
    await vi.waitFor(() => expect(registry.agents('frankfurt')).toHaveLength(1), { timeout: 30_000 });
    const dispatcher = createNatsDispatcher({ nc, logger: silentLogger, registry });
    const job = {
      jobId: 'stop-1',
      updateId: 'stop',
      url: `${inject('siteUrl')}index.html`,
      device: 'mobile' as const,
      location: 'frankfurt' as const,
      runIndex: 0,
      timeoutMs: 120_000,
    };
    const run = dispatcher.dispatch(job, { timeoutMs: 150_000, requestId: 'stop-1' });
    await vi.waitFor(() => expect(registry.agents('frankfurt')?.[0]?.busy).toBe(1), { timeout: 10_000 });
    expect((await fetch(`${ops}/readyz`)).status).toBe(200);

    agent.child.kill('SIGTERM');
    await vi.waitFor(async () => expect((await fetch(`${ops}/readyz`)).status).toBe(503), {
      timeout: 2_000,
      interval: 50,
    });
    expect((await fetch(`${ops}/healthz`)).status).toBe(200);
    await vi.waitFor(() => expect(registry.agents('frankfurt')).toEqual([]), { timeout: 2_000 });
    // A job offered now finds nobody: the stopping agent takes no more work.
    const late = await dispatcher.dispatch({ ...job, jobId: 'stop-2' }, { timeoutMs: 2_000, requestId: 'stop-2' });
    expect(late).toMatchObject({ ok: false, error: { code: 'NO_RESPONDERS' } });

    const outcome = await run;
    expect(outcome.ok, JSON.stringify(outcome).slice(0, 300)).toBe(true);
    // One SIGTERM only: a second would end the process before its cleanup.
    const code = agent.child.exitCode ?? (await once(agent.child, 'exit'))[0];
    expect(code).toBe(0);
    expect(await chromesOf(agent.child.pid!)).toEqual([]);
  }, 120_000);

  it('on SIGTERM while idle, with a warm Chrome: exits 0 within 2 s, no Chrome left', async () => {
    const idle = spawnPerfwatch(['agent'], {
      NATS_URL: stack.natsUrl,
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_LOCATION: 'tokyo',
      PERFWATCH_AGENT_ID: 'tyo-idle',
      OPS_PORT: '0',
    });
    try {
      await vi.waitFor(() => expect(registry.agents('tokyo')).toHaveLength(1), { timeout: 30_000 });
      const dispatcher = createNatsDispatcher({ nc, logger: silentLogger, registry });
      const job = {
        jobId: 'idle-1',
        updateId: 'idle',
        url: `${inject('siteUrl')}index.html`,
        device: 'desktop' as const,
        location: 'tokyo' as const,
        runIndex: 0,
        timeoutMs: 120_000,
      };
      const outcome = await dispatcher.dispatch(job, { timeoutMs: 150_000, requestId: 'idle-1' });
      expect(outcome.ok, JSON.stringify(outcome).slice(0, 300)).toBe(true);
      expect(await chromesOf(idle.child.pid!)).not.toEqual([]);

      const signalled = performance.now();
      idle.child.kill('SIGTERM');
      const code = idle.child.exitCode ?? (await once(idle.child, 'exit'))[0];
      const exitMs = performance.now() - signalled;
      expect(code).toBe(0);
      expect(exitMs, `exited ${Math.round(exitMs)} ms after SIGTERM`).toBeLessThan(2_000);
      expect(await chromesOf(idle.child.pid!)).toEqual([]);
    } finally {
      await idle.stop('SIGKILL');
    }
  }, 120_000);
});

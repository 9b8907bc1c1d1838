import { once } from 'node:events';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createNatsDispatcher, type AgentRegistry } from '@perfwatch/gateway';
import { agentProcessUnderTest, type AgentUnderTest } from '../support/agent-process.ts';
import { chromesOf } from '../support/chrome-processes.ts';
import type { PerfwatchProcess } from '../support/perfwatch-process.ts';
import { silentLogger } from '../support/test-services.ts';

// SIGTERM to an agent in the middle of a real Lighthouse run: it turns unready and says
// goodbye at once, takes no more work, finishes the run and replies, then exits 0 with its
// Chrome gone.

let stack: AgentUnderTest;
let nc: NatsConnection;
let registry: AgentRegistry;
let agent: PerfwatchProcess;

beforeAll(async () => {
  stack = await agentProcessUnderTest({ PERFWATCH_LOCATION: 'frankfurt', PERFWATCH_AGENT_ID: 'fra-stopping', PERFWATCH_OPS_HOST: '127.0.0.1' });
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
    const job = { jobId: 'stop-1', updateId: 'stop', url: `${inject('siteUrl')}index.html`, device: 'mobile' as const, location: 'frankfurt' as const, runIndex: 0, timeoutMs: 120_000 };
    const run = dispatcher.dispatch(job, { timeoutMs: 150_000, requestId: 'stop-1' });
    await vi.waitFor(() => expect(registry.agents('frankfurt')?.[0]?.busy).toBe(1), { timeout: 10_000 });
    expect((await fetch(`${ops}/readyz`)).status).toBe(200);

    agent.child.kill('SIGTERM');
    await vi.waitFor(async () => expect((await fetch(`${ops}/readyz`)).status).toBe(503), { timeout: 2_000, interval: 50 });
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
});

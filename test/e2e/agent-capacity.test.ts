import { existsSync } from 'node:fs';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createNatsDispatcher, type AgentRegistry } from '@perfwatch/gateway';
import { agentProcessUnderTest, type AgentUnderTest } from '../support/agent-process.ts';
import { chromesOf, describeProcesses, processesUsing } from '../support/chrome-processes.ts';
import type { PerfwatchProcess } from '../support/perfwatch-process.ts';
import { silentLogger } from '../support/test-services.ts';

// One agent process with capacity 2 and real Chromium: 20 Lighthouse runs, never more than two
// Chromes at once, each replaced after 4 runs, and not one Chrome process left after SIGTERM.
// Sized to prove that: each runner replaces its Chrome at least twice while the other runner runs
// (five Chromes in all), with desktop and mobile runs mixed; more runs add time, not evidence.

const RUNS = 20;
const RUNS_PER_BROWSER = 4;
let stack: AgentUnderTest;
let nc: NatsConnection;
let registry: AgentRegistry;
let agent: PerfwatchProcess;

beforeAll(async () => {
  stack = await agentProcessUnderTest({
    PERFWATCH_LOCATION: 'tokyo',
    PERFWATCH_AGENT_ID: 'tokyo-wide',
    PERFWATCH_CAPACITY: '2',
    PERFWATCH_RUNS_PER_BROWSER: String(RUNS_PER_BROWSER),
    LOG_LEVEL: 'warn',
  });
  ({ nc, registry, agent } = stack);
});

afterAll(async () => {
  await agent?.stop('SIGTERM');
  await stack?.dispose();
});

describe('agent capacity', () => {
  it(`makes ${RUNS} runs two at a time on two Chromes, replaces them, and leaves no Chrome behind`, async () => {
    await vi.waitFor(() => expect(registry.agents('tokyo')).toMatchObject([{ agentId: 'tokyo-wide', capacity: 2 }]), {
      timeout: 30_000,
    });
    const pid = agent.child.pid!;
    const dirs = new Set<string>();
    let mostBrowsers = 0;
    const excess: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const chromes = await chromesOf(pid);
        for (const chrome of chromes) dirs.add(chrome.dir);
        const browsers = chromes.reduce((n, c) => n + c.browsers.length, 0);
        mostBrowsers = Math.max(mostBrowsers, browsers);
        // Evidence for a failure: what each counted browser process was, with its parent.
        if (browsers > 2) excess.push(await describeProcesses(chromes.flatMap((c) => c.browsers)));
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();

    const dispatcher = createNatsDispatcher({ nc, logger: silentLogger, registry });
    const url = `${inject('siteUrl')}index.html`;
    const started = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: RUNS }, (_, runIndex) =>
        dispatcher.dispatch(
          {
            jobId: `cap-${runIndex}`,
            updateId: 'capacity',
            url,
            device: runIndex % 2 ? 'desktop' : 'mobile',
            location: 'tokyo',
            runIndex: runIndex % 100,
            timeoutMs: 120_000,
          },
          { timeoutMs: 900_000, requestId: `cap-${runIndex}` },
        ),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    sampling = false;
    await sampler;
    console.log(
      `agent capacity 2: ${RUNS} runs in ${seconds.toFixed(0)} s (${((RUNS / seconds) * 3600).toFixed(0)} runs/hour), ${dirs.size} Chromes used`,
    );

    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    expect(
      new Set(
        await Promise.all(
          outcomes.map(async (o) => (o.ok ? (await o.result.lighthouse.read()).configSettings?.formFactor : null)),
        ),
      ),
    ).toEqual(new Set(['mobile', 'desktop']));
    // Two at a time, never more; 4 runs per Chrome: at least 5 Chromes over the 20 runs.
    expect(mostBrowsers, excess.slice(0, 3).join('\n')).toBe(2);
    expect(dirs.size).toBeGreaterThanOrEqual(RUNS / RUNS_PER_BROWSER);
    // Retired Chromes are gone while the agent runs on: only the two warm ones are left.
    const live = await chromesOf(pid);
    expect(live.length).toBeLessThanOrEqual(2);
    expect((await processesUsing([...dirs].filter((dir) => !live.some((l) => l.dir === dir)))).pids).toEqual([]);

    expect(await agent.stop('SIGTERM')).toBe(0);
    expect((await processesUsing([...dirs])).pids).toEqual([]);
    expect([...dirs].filter((dir) => existsSync(dir))).toEqual([]);
  }, 900_000);
});

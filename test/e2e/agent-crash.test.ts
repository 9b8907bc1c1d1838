import { existsSync } from 'node:fs';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decodeReply, encodeJob, HEADERS, type Location } from '@perfwatch/common';
import { chromesOf } from '../support/chrome-processes.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats } from '../support/test-services.ts';

// An agent killed with SIGKILL leaves its warm Chrome behind; the next agent to start on the
// machine removes it, and leaves a live agent's Chrome alone.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
const agents: PerfwatchProcess[] = [];

beforeAll(async () => {
  nats = await isolatedNats();
});
afterAll(async () => {
  // Stopped cleanly even when the test failed, so no Chrome outlives the suite.
  for (const agent of agents) await agent.stop('SIGTERM');
  await nats?.dispose();
});

function startAgentProcess(location: Location): PerfwatchProcess {
  const agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: location,
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  agents.push(agent);
  return agent;
}

async function audit(location: Location): Promise<void> {
  const nc = await connect({ servers: nats.url });
  try {
    const job = {
      jobId: `crash-${location}`,
      updateId: 'crash',
      url: `${inject('siteUrl')}index.html`,
      device: 'mobile' as const,
      location,
      runIndex: 0,
      timeoutMs: 120_000,
    };
    const msg = await nc.request(`perfwatch.audit.v1.${location}`, encodeJob(job), { timeout: 150_000 });
    expect((await decodeReply(msg.data, msg.headers?.get(HEADERS.contentEncoding))).ok).toBe(true);
  } finally {
    await nc.close();
  }
}

describe('agent crash', () => {
  it("the next agent reaps a killed agent's Chrome and spares a live one's", async () => {
    const doomed = startAgentProcess('london');
    const survivor = startAgentProcess('tokyo');
    await Promise.all([doomed.waitFor(/agent serving location/), survivor.waitFor(/agent serving location/)]);
    await Promise.all([audit('london'), audit('tokyo')]);

    const [orphaned] = await chromesOf(doomed.child.pid!);
    const [spared] = await chromesOf(survivor.child.pid!);
    expect(orphaned!.pids.length).toBeGreaterThan(0);
    expect(spared!.pids.length).toBeGreaterThan(0);

    await doomed.stop('SIGKILL');
    // Killed outright, the agent could not take its Chrome down: the Chrome lives on.
    expect((await chromesOf(doomed.child.pid!))[0]!.pids.length).toBeGreaterThan(0);

    const next = startAgentProcess('london');
    await next.waitFor(/agent serving location/);
    expect(next.output()).toMatch(/removed the Chrome of an agent that died/);
    await expect
      .poll(async () => (await chromesOf(doomed.child.pid!)).flatMap((c) => c.pids), { timeout: 5_000 })
      .toEqual([]);
    expect(existsSync(orphaned!.dir)).toBe(false);
    expect((await chromesOf(survivor.child.pid!))[0]!.pids).toEqual(spared!.pids);

    expect(await survivor.stop('SIGTERM')).toBe(0);
    // A clean stop leaves nothing behind either.
    expect(await chromesOf(survivor.child.pid!)).toEqual([]);
  }, 180_000);
});

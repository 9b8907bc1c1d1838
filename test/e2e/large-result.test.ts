import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { auditResultSchema } from '@perfwatch/common';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// A real page whose Lighthouse result is several megabytes (1,500 unlabelled links and images,
// each listed in the accessibility audits), measured by an agent process over two nats-servers:
// one with the default 1 MB max_payload (the compressed result fits whole) and one with 200 kB
// (the agent shrinks the result to fit, keeping every score and metric, and says so).

type Stack = {
  nats: Awaited<ReturnType<typeof isolatedNats>>;
  gateway: TestGateway;
  agent: PerfwatchProcess;
  token: string;
};
const stacks: Stack[] = [];
const page = () => `${inject('siteUrl')}huge.html`;

async function stack(config?: string): Promise<Stack> {
  const nats = await isolatedNats(config === undefined ? {} : { config });
  // No re-tests: a second run of this page proves nothing about its size, and three of them
  // took a slow machine past the hook's time.
  const gateway = await startTestGateway({
    natsUrl: nats.url,
    runTimeoutMs: 120_000,
    replyTimeoutMs: 170_000,
    config: { MAX_RETESTS: 0 },
  });
  const agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: 'sao_paulo',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  const created: Stack = { nats, gateway, agent, token: (await gateway.admin.createUser('big')).token };
  stacks.push(created);
  await gateway.admin.addProject('big', page(), { locations: ['sao_paulo'], runs: 1 });
  await vi.waitFor(() => expect(gateway.runtime.agents.agents('sao_paulo')).toHaveLength(1), { timeout: 30_000 });
  return created;
}

async function update({ gateway, token }: Stack) {
  const res = await fetch(`${gateway.url}/v1/update?url=${encodeURIComponent(page())}&device=mobile`, {
    headers: { Authorization: token },
  });
  const text = await res.text();
  expect(res.status, text.slice(0, 400)).toBe(200);
  const cell = auditResultSchema.parse(JSON.parse(text)).mobile!.sao_paulo!;
  return {
    bytes: text.length,
    lhr: cell.lighthouse as unknown as {
      runWarnings: string[];
      categories: Record<string, { score: number }>;
      audits: Record<string, { numericValue?: number; details?: { items?: unknown[] } }>;
    },
  };
}

afterAll(async () => {
  for (const { agent, gateway, nats } of stacks) {
    await agent.stop();
    await gateway.stop();
    await nats.dispose();
  }
});

describe('a multi-megabyte Lighthouse result', () => {
  let whole: Awaited<ReturnType<typeof update>>;

  beforeAll(async () => {
    whole = await update(await stack());
  }, 200_000);

  it('reaches the gateway whole under the default 1 MB payload limit: compressed, not cut', () => {
    expect(whole.bytes).toBeGreaterThan(2_000_000);
    expect(whole.lhr.audits['image-alt']!.details!.items).toHaveLength(1500);
    expect(whole.lhr.runWarnings.join(' ')).not.toMatch(/shrunk/);
  });

  it('is shrunk to fit a 200 kB limit, keeping every score and metric, and says so', async () => {
    const small = await stack('max_payload: 204800\n');
    const shrunk = await update(small);
    expect(small.agent.output()).toMatch(/result exceeds the NATS payload limit; shrinking it/);
    expect(shrunk.bytes).toBeLessThan(whole.bytes / 4);
    expect(shrunk.lhr.runWarnings.join(' ')).toMatch(
      /shrunk to fit the message size limit; details dropped from: .*image-alt/,
    );
    expect(shrunk.lhr.audits['image-alt']!.details).toBeUndefined();
    expect(Object.keys(shrunk.lhr.categories).sort()).toEqual(Object.keys(whole.lhr.categories).sort());
    expect(shrunk.lhr.audits['largest-contentful-paint']!.numericValue).toBeGreaterThan(0);
    // The details perfwatch reads for its KPI records are never dropped.
    expect(shrunk.lhr.audits['network-requests']!.details!.items!.length).toBeGreaterThan(0);
  }, 200_000);
});

import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAgentMetrics, RunFailure, startAgent, type Agent } from '@perfwatch/agent';
import { startOpsServer, type OpsServer } from '@perfwatch/common';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// /metrics, /healthz and /readyz of a gateway and an agent over a real nats-server and a real
// MongoDB-wire server: the figures an operator graphs move when updates happen, and no label
// carries a URL, a token or a project.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
const agents: Agent[] = [];
let ops: OpsServer;
let token: string;
const SHOP = 'https://metrics-shop.example/';

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url, replyTimeoutMs: 5_000 });
  agentConn = await connect({ servers: nats.url });
  let london: Agent | null = null;
  const metrics = createAgentMetrics({ nc: agentConn, location: 'london', agent: () => london });
  london = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({ delayMs: 20 }),
    logger: silentLogger,
    agentId: 'london-ops',
    capacity: 2,
    observer: metrics,
  });
  agents.push(london);
  agents.push(
    startAgent({
      nc: agentConn,
      location: 'tokyo',
      runner: fixtureRunner({ fail: () => new RunFailure('PAGE_LOAD_FAILED', 'NO_FCP', false) }),
      logger: silentLogger,
      agentId: 'tokyo-ops',
    }),
  );
  ops = await startOpsServer({ port: 0, host: '127.0.0.1', registry: metrics.registry, ready: () => ({ ok: true }) });
  ({ token } = await gateway.admin.createUser('ops'));
  await gateway.admin.addProject('ops', SHOP, { locations: ['london', 'tokyo'], runs: 2 });
  await vi.waitFor(() => expect(gateway.runtime.agents.all()).toHaveLength(2));
});

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await ops?.close();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

/** The value of one sample line, e.g. `perfwatch_agents{location="london"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('operator endpoints', () => {
  it('gateway /metrics counts updates, dispatches, HTTP requests and agents, with bounded labels only', async () => {
    const res = await fetch(`${gateway.url}/v1/update?url=${encodeURIComponent(SHOP)}&device=mobile`, {
      headers: { Authorization: token },
    });
    expect(res.status).toBe(200);
    await fetch(`${gateway.url}/v1/audit?url=${encodeURIComponent(SHOP)}&date=2020-01-01T00:00:00`, {
      headers: { Authorization: token },
    });

    const scrape = await fetch(`${gateway.url}/metrics`);
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await scrape.text();
    // Tokyo's agent fails every run: london measured, tokyo not.
    expect(sample(text, 'perfwatch_updates_total{mode="sync",update_type="manual",outcome="partial"}')).toBe(1);
    expect(
      sample(text, 'perfwatch_dispatch_duration_seconds_count{location="london",device="mobile",outcome="ok"}'),
    ).toBe(2);
    expect(
      sample(
        text,
        'perfwatch_dispatch_duration_seconds_count{location="tokyo",device="mobile",outcome="page_load_failed"}',
      ),
    ).toBe(2);
    expect(
      sample(text, 'perfwatch_http_request_duration_seconds_count{route="/v1/update",method="GET",status="200"}'),
    ).toBe(1);
    expect(
      sample(text, 'perfwatch_http_request_duration_seconds_count{route="/v1/audit",method="GET",status="404"}'),
    ).toBe(1);
    expect(sample(text, 'perfwatch_agents{location="london"}')).toBe(1);
    expect(sample(text, 'perfwatch_agents{location="frankfurt"}')).toBe(0);
    expect(sample(text, 'perfwatch_agent_slots{location="london",state="capacity"}')).toBe(2);
    expect(sample(text, 'perfwatch_queue_depth{location="london"}')).toBe(0);
    expect(sample(text, 'perfwatch_nats_connected')).toBe(1);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    // Nothing a caller chose, and no secret, ever becomes a label.
    expect(text).not.toContain('metrics-shop');
    expect(text).not.toContain(token.slice(0, 11));
  });

  it('agent /metrics times runs by device and outcome, and shows capacity and busy runners', async () => {
    const text = await (await fetch(`${ops.url}/metrics`)).text();
    expect(
      sample(text, 'perfwatch_lighthouse_run_duration_seconds_count{location="london",device="mobile",outcome="ok"}'),
    ).toBe(2);
    expect(sample(text, 'perfwatch_agent_capacity{location="london"}')).toBe(2);
    expect(sample(text, 'perfwatch_agent_busy{location="london"}')).toBe(0);
    expect(sample(text, 'perfwatch_nats_connected')).toBe(1);
    expect((await fetch(`${ops.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${ops.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${ops.url}/nope`)).status).toBe(404);
  });

  it('gateway /readyz checks NATS and the database; /healthz only that the process answers', async () => {
    expect(await (await fetch(`${gateway.url}/readyz`)).json()).toEqual({ status: 'ready' });
    const second = await startTestGateway({ natsUrl: nats.url });
    try {
      await second.store.close();
      const res = await fetch(`${second.url}/readyz`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { status: string }).status).toBe('not ready');
      expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
    } finally {
      await second.runtime.stop();
      await second.nc.drain();
    }
  });

  it('gateway with OPS_PORT: /metrics and /readyz on the ops port only, the API on the public port', async () => {
    const split = await startTestGateway({ natsUrl: nats.url, config: { OPS_PORT: 0, OPS_HOST: '127.0.0.1' } });
    try {
      const ops = split.runtime.ops!;
      expect(ops.url).not.toBe(split.url);
      expect(await (await fetch(`${ops.url}/readyz`)).json()).toEqual({ status: 'ready' });
      expect(await (await fetch(`${ops.url}/metrics`)).text()).toMatch(/^perfwatch_agents\{location="london"\} 1$/m);
      expect((await fetch(`${ops.url}/healthz`)).status).toBe(200);
      // The public port keeps the API and /healthz, and no longer answers /metrics or /readyz.
      for (const path of ['/metrics', '/readyz']) expect((await fetch(`${split.url}${path}`)).status, path).toBe(404);
      expect((await fetch(`${split.url}/healthz`)).status).toBe(200);
      const { token: t } = await split.admin.createUser('ops-split');
      expect((await fetch(`${split.url}/v1/projects`, { headers: { Authorization: t } })).status).toBe(200);
      // The database gone: the ops port's /readyz says so.
      await split.store.close();
      expect((await fetch(`${ops.url}/readyz`)).status).toBe(503);
    } finally {
      await split.runtime.stop();
      await split.nc.drain();
    }
  });
});

import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createAdmin, freePort, MongoStore } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, silentLogger } from '../support/test-services.ts';

// Queued (async) updates survive the gateway that took them: real gateway processes over a
// real JetStream nats-server and a real MongoDB-wire server; the agent's Lighthouse is a
// stub (the subject here is delivery, not measurement).

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let store: MongoStore;
let agentConn: NatsConnection;
let agent: Agent;
const runner = fixtureRunner({ delayMs: 3_000 });
const gateways: PerfwatchProcess[] = [];
const db = { MONGODB_URI: '', MONGODB_DB: `pwqueue_${randomUUID().slice(0, 8)}` };
let token: string;
const URL_ = 'https://queued.example/';

async function startGatewayProcess(): Promise<{ process: PerfwatchProcess; url: string }> {
  const port = await freePort();
  const process = spawnPerfwatch(['gateway'], { ...db, NATS_URL: nats.url, PORT: String(port), HOST: '127.0.0.1', UPDATE_ACK_WAIT_MS: '2000', UPDATE_RETRY_DELAY_MS: '500', SHUTDOWN_READINESS_DELAY_MS: '0' });
  gateways.push(process);
  await process.waitFor(/gateway listening/);
  return { process, url: `http://127.0.0.1:${port}` };
}

beforeAll(async () => {
  db.MONGODB_URI = inject('mongoUri');
  nats = await isolatedNats();
  store = new MongoStore({ uri: db.MONGODB_URI, dbName: db.MONGODB_DB });
  await store.init();
  const admin = createAdmin(store);
  ({ token } = await admin.createUser('queue'));
  await admin.addProject('queue', URL_, { locations: ['london'], runs: 1 });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({ nc: agentConn, location: 'london', runner, logger: silentLogger, agentId: 'london-stub' });
});

afterAll(async () => {
  for (const gateway of gateways) await gateway.stop('SIGKILL');
  await agent?.stop();
  await agentConn?.drain();
  await store?.close();
  await nats?.dispose();
});

async function status(base: string, id: string): Promise<{ status: string; attempts: number; date: string | null }> {
  const res = await fetch(`${base}/v1/updates/${id}`, { headers: { Authorization: token } });
  return (await res.json()) as { status: string; attempts: number; date: string | null };
}

describe('queued updates', () => {
  it('a gateway killed mid-update: another gateway finishes the update, which makes exactly one snapshot', async () => {
    const first = await startGatewayProcess();
    const res = await fetch(`${first.url}/v1/update?url=${encodeURIComponent(URL_)}&mode=async&device=mobile`, { headers: { Authorization: token } });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    // The first gateway took the job and the agent is running it.
    await vi.waitFor(() => expect(runner.requests).toHaveLength(1), { timeout: 10_000 });
    expect((await status(first.url, id)).status).toBe('running');
    await first.process.stop('SIGKILL');

    const second = await startGatewayProcess();
    await vi.waitFor(async () => expect((await status(second.url, id)).status).toBe('done'), { timeout: 30_000, interval: 250 });
    const done = await status(second.url, id);
    expect(done.attempts).toBe(2);
    const project = (await store.listProjects()).find((p) => p.url === URL_)!;
    const snapshots = await store.listSnapshots(project.id);
    expect(snapshots).toHaveLength(1);
    expect(done.date).not.toBeNull();
  }, 60_000);
});

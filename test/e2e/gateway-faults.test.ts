import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, onTestFailed, vi } from 'vitest';
import { auditResultSchema, errorEnvelopeSchema } from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createAdmin, MongoStore } from '@perfwatch/gateway';
import { freePort, startFerretDb, type LocalServer } from '../support/local-servers.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, silentLogger } from '../support/test-services.ts';

// The gateway's own faults, seen from the user's side: a SIGTERM while a sync update is in
// flight, and its database going away and coming back. Real gateway processes on a real
// nats-server and a MongoDB-wire server of this file's own (so it can be stopped and restarted
// on the same port and data); the agent's Lighthouse is a stub, the subject being the gateway.

const URL_ = 'https://gateway-faults.example/';
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let dbDir: string;
let dbPort: number;
let db: LocalServer;
let agentConn: NatsConnection;
let agent: Agent;
const runner = fixtureRunner({ delayMs: 2_000 });
const gateways: PerfwatchProcess[] = [];
let token: string;

const startDb = () => startFerretDb({ binary: inject('ferretDbBinary'), dir: dbDir, port: dbPort });
/** The database dies at once (a graceful stop would let it finish what it was doing). */
async function killDb(): Promise<void> {
  process.kill(db.pid, 'SIGKILL');
  await db.stop();
}

async function startGatewayProcess(): Promise<{ process: PerfwatchProcess; url: string }> {
  const port = await freePort();
  const process = spawnPerfwatch(['gateway'], {
    NATS_URL: nats.url,
    MONGODB_URI: db.url,
    MONGODB_DB: 'faults',
    PORT: String(port),
    HOST: '127.0.0.1',
    SHUTDOWN_READINESS_DELAY_MS: '500',
    UPDATE_ACK_WAIT_MS: '3000',
    UPDATE_RETRY_DELAY_MS: '500',
  });
  gateways.push(process);
  await process.waitFor(/gateway listening/);
  return { process, url: `http://127.0.0.1:${port}` };
}

beforeAll(async () => {
  nats = await isolatedNats();
  dbDir = await mkdtemp(join(tmpdir(), 'perfwatch-faults-db-'));
  dbPort = await freePort();
  db = await startDb();
  const store = new MongoStore({ uri: db.url, dbName: 'faults' });
  await store.init();
  const admin = createAdmin(store);
  ({ token } = await admin.createUser('faults'));
  await admin.addProject('faults', URL_, { locations: ['london'], runs: 1 });
  await store.close();
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner,
    logger: silentLogger,
    agentId: 'london-stub',
    announceIntervalMs: 1_000,
  });
});

beforeEach(() => {
  onTestFailed(() => console.error(gateways.map((g) => g.output().slice(-4000)).join('\n---\n')));
});

afterAll(async () => {
  for (const gateway of gateways) await gateway.stop('SIGKILL');
  await agent?.stop();
  await agentConn?.drain();
  await db?.stop();
  await nats?.dispose();
  if (dbDir) await rm(dbDir, { recursive: true, force: true });
});

const get = (base: string, path: string) => fetch(`${base}${path}`, { headers: { Authorization: token } });
const update = (base: string, extra = '') =>
  get(base, `/v1/update?url=${encodeURIComponent(URL_)}&device=mobile${extra}`);

describe('gateway faults', () => {
  it('SIGTERM during a sync update: the update is finished, answered and stored before the gateway exits 0', async () => {
    const gateway = await startGatewayProcess();
    const ran = runner.requests.length;
    const pending = update(gateway.url);
    await vi.waitFor(() => expect(runner.requests.length).toBe(ran + 1), { timeout: 10_000, interval: 20 });
    gateway.process.child.kill('SIGTERM');
    const exited = once(gateway.process.child, 'exit');

    const res = await pending;
    const body = await res.json();
    expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(200);
    const date = auditResultSchema.parse(body).mobile!.london!.lighthouse.date;
    expect((await exited)[0]).toBe(0);
    // Stored: another gateway serves the snapshot.
    const other = await startGatewayProcess();
    const audit = await get(other.url, `/v1/audit?url=${encodeURIComponent(URL_)}&date=${date}`);
    expect(audit.status).toBe(200);
    expect(await audit.json()).toEqual(body);
    await other.process.stop('SIGTERM');
  }, 60_000);

  it('the database killed and restarted under a sync update: the update waits for it and is stored', async () => {
    const gateway = await startGatewayProcess();
    const ran = runner.requests.length;
    const pending = update(gateway.url);
    await vi.waitFor(() => expect(runner.requests.length).toBe(ran + 1), { timeout: 10_000, interval: 20 });
    await killDb();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    db = await startDb();
    const res = await pending;
    expect(res.status, JSON.stringify(await res.clone().json()).slice(0, 300)).toBe(200);
    const date = auditResultSchema.parse(await res.json()).mobile!.london!.lighthouse.date;
    expect((await get(gateway.url, `/v1/audit?url=${encodeURIComponent(URL_)}&date=${date}`)).status).toBe(200);
    await gateway.process.stop('SIGTERM');
  }, 60_000);

  it('while the database is down: requests get the 500 envelope and /readyz says so; an update queued before is done once it is back', async () => {
    const gateway = await startGatewayProcess();
    const ran = runner.requests.length;
    const queued = await update(gateway.url, '&mode=async');
    expect(queued.status).toBe(200);
    const { id } = (await queued.json()) as { id: string };
    await vi.waitFor(() => expect(runner.requests.length).toBe(ran + 1), { timeout: 10_000, interval: 20 });
    await killDb();

    const down = await update(gateway.url);
    const envelope = errorEnvelopeSchema.parse(await down.json());
    expect(down.status).toBe(500);
    expect(envelope.status).toBe('INTERNAL_SERVER_ERROR');
    expect(envelope.message).toMatch(/try again/i);
    expect(JSON.stringify(envelope)).not.toMatch(/Mongo|ECONNREFUSED|at .*\.ts:/);
    const async = await update(gateway.url, '&mode=async');
    expect(async.status).toBe(500);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    // The queued update's run ends while the database is away: its result waits for it.
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    db = await startDb();
    await vi.waitFor(async () => expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200), {
      timeout: 30_000,
      interval: 250,
    });
    await vi.waitFor(
      async () =>
        expect(((await (await get(gateway.url, `/v1/updates/${id}`)).json()) as { status: string }).status).toBe(
          'done',
        ),
      { timeout: 30_000, interval: 250 },
    );
    const { date } = (await (await get(gateway.url, `/v1/updates/${id}`)).json()) as { date: string };
    expect((await get(gateway.url, `/v1/audit?url=${encodeURIComponent(URL_)}&date=${date}`)).status).toBe(200);
    const again = await update(gateway.url);
    expect(again.status).toBe(200);
    expect(gateway.process.child.exitCode).toBeNull();
    await gateway.process.stop('SIGTERM');
  }, 90_000);
});

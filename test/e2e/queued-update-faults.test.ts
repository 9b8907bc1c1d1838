import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed, vi } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createAdmin, MongoStore, updateSubject } from '@perfwatch/gateway';
import { freePort, startNatsServer } from '../support/local-servers.ts';
import { jetstream } from '@nats-io/jetstream';
import { formatApiDateTime } from '@perfwatch/common';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { spawnGateway, spawnNode, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { measuredWait } from '../support/measured-wait.ts';
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
/**
 * Updates through the faults: ten or more in each of its five phases (before the faults, after
 * the agent's kill, while a gateway is down, after it is back, after NATS restarted), so that
 * every fault meets updates queued, running and being stored; 200 proved no more, and took a
 * slow machine past its wait.
 */
const FAULT_UPDATES = 100;
/** The project of the stuck-update tests: its snapshots are theirs alone. */
const STUCK_URL = 'https://stuck.example/';

async function startGatewayProcess(
  env: Record<string, string> = {},
): Promise<{ process: PerfwatchProcess; url: string }> {
  const gateway = await spawnGateway({
    ...db,
    NATS_URL: nats.url,
    UPDATE_ACK_WAIT_MS: '2000',
    UPDATE_RETRY_DELAY_MS: '500',
    ...env,
  });
  gateways.push(gateway.process);
  return gateway;
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

async function status(
  base: string,
  id: string,
): Promise<{ status: string; attempts: number; date: string | null; reason: string | null }> {
  const res = await fetch(`${base}/v1/updates/${id}`, { headers: { Authorization: token } });
  return (await res.json()) as { status: string; attempts: number; date: string | null; reason: string | null };
}

/**
 * The lease holder sweeps for stuck updates every 300 ms and takes one untouched for 1.5 s as
 * stuck; a killed holder's lease runs out after a second, so the next gateway sweeps at once.
 */
const SWEEPING = {
  SCHEDULER_INTERVAL_MS: '300',
  SCHEDULER_LEASE_TTL_MS: '1000',
  UPDATE_SWEEP_EVERY_MS: '300',
  UPDATE_STUCK_AFTER_MS: '1500',
};

/** An update as a gateway records it: in its user's backlog, then (`admitted`) given to the queue. */
async function recordedUpdate(
  on: MongoStore,
  { admitted = true, id = randomUUID() } = {},
): Promise<{ id: string; userId: string }> {
  const project = (await on.listProjects()).find((p) => p.url === STUCK_URL)!;
  await on.createUpdate({
    id,
    userId: project.userId,
    projectId: project.id,
    url: project.url,
    devices: ['mobile'],
    locations: project.locations,
    updateType: 'manual',
    runs: 1,
  });
  if (admitted) expect((await on.admitUpdates(project.userId, 1_000)).map((u) => u.id)).toContain(id);
  return { id, userId: project.userId };
}

describe('queued updates', () => {
  it('a gateway killed mid-update: another gateway finishes the update, which makes exactly one snapshot', async () => {
    const first = await startGatewayProcess();
    const res = await fetch(`${first.url}/v1/update?url=${encodeURIComponent(URL_)}&mode=async&device=mobile`, {
      headers: { Authorization: token },
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    // The first gateway took the job and the agent is running it.
    await vi.waitFor(() => expect(runner.requests).toHaveLength(1), { timeout: 10_000 });
    expect((await status(first.url, id)).status).toBe('running');
    await first.process.stop('SIGKILL');

    const second = await startGatewayProcess();
    await vi.waitFor(async () => expect((await status(second.url, id)).status).toBe('done'), {
      timeout: 30_000,
      interval: 250,
    });
    const done = await status(second.url, id);
    expect(done.attempts).toBe(2);
    const project = (await store.listProjects()).find((p) => p.url === URL_)!;
    const snapshots = await store.listSnapshots(project.id);
    expect(snapshots).toHaveLength(1);
    expect(done.date).not.toBeNull();
  }, 60_000);

  it(`${FAULT_UPDATES} async updates through an agent SIGKILL, a gateway killed and restarted and a NATS restart: every one done, with exactly one snapshot`, async () => {
    // A NATS server of this test's own, restarted in place (same port, same JetStream store).
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-faults-'));
    const port = await freePort();
    let server = await startNatsServer({ binary: inject('natsServerBinary'), dir, port });
    const natsUrl = server.url;
    const faultDb = { MONGODB_URI: db.MONGODB_URI, MONGODB_DB: `pwfault_${randomUUID().slice(0, 8)}` };
    const faultStore = new MongoStore({ uri: faultDb.MONGODB_URI, dbName: faultDb.MONGODB_DB });
    await faultStore.init();
    const admin = createAdmin(faultStore);
    const { token: faultToken } = await admin.createUser('faults');
    const user = (await faultStore.findUserByName('faults'))!;
    // Twenty projects: snapshots of one project take distinct seconds, and 100 updates of a
    // single project would need 100 s of wall time.
    const projectUrls = Array.from({ length: 20 }, (_, i) => `https://faults-${i}.example/`);
    for (const url of projectUrls) await admin.addProject('faults', url, { locations: ['london'], runs: 1 });
    const processes: PerfwatchProcess[] = [];
    const stubAgent = (id: string) => {
      const child = spawnNode(['test/support/stub-agent.ts'], {
        NATS_URL: natsUrl,
        PERFWATCH_LOCATION: 'london',
        PERFWATCH_AGENT_ID: id,
        STUB_DELAY_MS: '150',
      });
      processes.push(child);
      return child;
    };
    const gatewayAt = async (gatewayPort: number) => {
      const child = spawnPerfwatch(['gateway'], {
        ...faultDb,
        NATS_URL: natsUrl,
        PORT: String(gatewayPort),
        HOST: '127.0.0.1',
        UPDATE_WORKERS: '6',
        MAX_ACTIVE_UPDATES_PER_USER: '6',
        UPDATE_ACK_WAIT_MS: '2000',
        UPDATE_RETRY_DELAY_MS: '300',
        UPDATE_MAX_DELIVER: '50',
        RUN_TIMEOUT_MS: '3000',
        SYNC_UPDATE_TIMEOUT_MS: '4000',
        SHUTDOWN_READINESS_DELAY_MS: '0',
        RATE_LIMIT_UPDATES_PER_MINUTE: '100000',
        // FerretDB v1 applies conditional updates of one document without atomicity: a delivery's
        // write can undo another's `done` (190 of 200 tries in a probe). The lease holder's sweep
        // records such an update done from its stored snapshot; here it looks every second.
        SCHEDULER_INTERVAL_MS: '500',
        UPDATE_SWEEP_EVERY_MS: '1000',
        UPDATE_STUCK_AFTER_MS: '5000',
        LOG_LEVEL: 'warn',
      });
      processes.push(child);
      await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${gatewayPort}/readyz`)).status).toBe(200), {
        timeout: 30_000,
        interval: 200,
      });
      return child;
    };
    try {
      const agents = ['a', 'b', 'c'].map(stubAgent);
      await Promise.all(agents.map((a) => a.waitFor(/stub agent serving/)));
      const ports = [await freePort(), await freePort()];
      let gateways = [await gatewayAt(ports[0]!), await gatewayAt(ports[1]!)];

      const accepted: string[] = [];
      let refused = 0;
      const submit = async (n: number) => {
        // A client that retries until its update is accepted: only accepted updates count.
        for (let attempt = 0; ; attempt++) {
          if (attempt > 300)
            throw new Error(
              `update ${n} was refused for a minute; last gateway output:\n${gateways[n % 2]!.output().slice(-3000)}`,
            );
          // Behind a load balancer: a retry may reach the other gateway.
          const base = `http://127.0.0.1:${ports[(n + attempt) % 2]!}`;
          try {
            const res = await fetch(
              `${base}/v1/update?url=${encodeURIComponent(projectUrls[n % 20]!)}&mode=async&device=mobile`,
              { headers: { Authorization: faultToken }, signal: AbortSignal.timeout(10_000) },
            );
            if (res.status === 200) {
              accepted.push(((await res.json()) as { id: string }).id);
              return;
            }
            refused++;
          } catch {
            refused++;
          }
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      };
      const submitRange = async (from: number, to: number) => {
        for (let n = from; n < to; n += 10)
          await Promise.all(Array.from({ length: Math.min(10, to - n) }, (_, i) => submit(n + i)));
      };

      // What happened when, shown if the test fails.
      const timeline: string[] = [];
      const progress = (what: string) =>
        timeline.push(`${new Date().toISOString()} ${what} accepted=${accepted.length} refused=${refused}`);
      onTestFailed(() => console.log(timeline.join('\n')));
      const submitted = performance.now();
      const phase = (share: number) => Math.round(FAULT_UPDATES * share);
      await submitRange(0, phase(0.25));
      progress(`first ${phase(0.25)}`);
      // An agent dies mid-run, without a goodbye.
      await agents[0]!.stop('SIGKILL');
      await submitRange(phase(0.25), phase(0.5));
      progress(`agent killed, ${phase(0.5)}`);
      // A gateway dies with jobs in hand, and comes back.
      await gateways[0]!.stop('SIGKILL');
      await submitRange(phase(0.5), phase(0.65));
      progress(`gateway killed, ${phase(0.65)}`);
      gateways[0] = await gatewayAt(ports[0]!);
      progress('gateway back');
      await submitRange(phase(0.65), phase(0.75));
      // NATS restarts: JetStream keeps the queue on disk; every client reconnects.
      await server.stop();
      await new Promise((resolve) => setTimeout(resolve, 500));
      server = await startNatsServer({ binary: inject('natsServerBinary'), dir, port });
      progress('nats restarted');
      await submitRange(phase(0.75), FAULT_UPDATES);
      progress('all submitted');
      expect(accepted).toHaveLength(FAULT_UPDATES);
      expect(new Set(accepted).size).toBe(FAULT_UPDATES);
      // The pace this machine kept while the updates were submitted sets the wait for the rest.
      const doneSoFar = (await Promise.all(accepted.map((id) => faultStore.findUpdate(user.id, id)))).filter(
        (u) => u?.status === 'done',
      ).length;
      const perUpdateMs = (performance.now() - submitted) / Math.max(1, doneSoFar);
      const waitMs = measuredWait(perUpdateMs, FAULT_UPDATES - doneSoFar, { floorMs: 60_000 });
      progress(
        `${doneSoFar} done, one per ${Math.round(perUpdateMs)} ms: waiting up to ${Math.round(waitMs / 1000)} s`,
      );

      await vi.waitFor(
        async () => {
          const records = await Promise.all(accepted.map((id) => faultStore.findUpdate(user.id, id)));
          const waiting = records.filter((u) => u?.status !== 'done');
          if (timeline.at(-1)?.startsWith('waiting')) timeline.pop();
          // Enough of each to tell why it waits: its state, deliveries, last reason and when it last changed.
          timeline.push(
            `waiting for ${waiting.length}: ${JSON.stringify(waiting.slice(0, 5).map((u) => u && { id: u.id, status: u.status, attempts: u.attempts, reason: u.reason, updatedAt: u.updatedAt }))}`,
          );
          expect(waiting.map((u) => u?.status)).toEqual([]);
        },
        // Six of the user's updates run at once (MAX_ACTIVE_UPDATES_PER_USER), each bound by
        // FerretDB's writes, whose pace differs 3× between an idle fast machine and a slow one
        // beside the rest of the suite: the wait is the pace measured above.
        { timeout: waitMs, interval: 1_000 },
      );
      // Exactly one snapshot per update: 200 in all, and each update's date is one of its project's.
      const snapshots = (
        await Promise.all(
          (await faultStore.listProjects(user.id)).map(async (p) =>
            (await faultStore.listSnapshots(p.id)).map((s) => `${p.url} ${s.date.toISOString()}`),
          ),
        )
      ).flat();
      expect(snapshots).toHaveLength(FAULT_UPDATES);
      const updates = await Promise.all(accepted.map(async (id) => (await faultStore.findUpdate(user.id, id))!));
      expect(new Set(updates.map((u) => `${u.url} ${u.date!.toISOString()}`))).toEqual(new Set(snapshots));
      console.log(
        `faults: ${FAULT_UPDATES} updates accepted (${refused} submissions refused while parts were down), all done, ${FAULT_UPDATES} snapshots`,
      );
      gateways = [];
    } finally {
      for (const child of processes) await child.stop('SIGKILL');
      await server.stop();
      await faultStore.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 1_200_000);
});

describe('no update stays unfinished (a crash injected on each path)', () => {
  // A database of their own (a fresh scheduler lease, their own updates), and no gateway of the
  // tests above left running to take their jobs.
  const stuckDb = { MONGODB_DB: `pwstuck_${randomUUID().slice(0, 8)}` };
  let stuckStore: MongoStore;
  let stuckToken: string;
  const stuckStatus = async (base: string, id: string) =>
    (await (await fetch(`${base}/v1/updates/${id}`, { headers: { Authorization: stuckToken } })).json()) as {
      status: string;
      date: string | null;
      reason: string | null;
    };
  beforeAll(async () => {
    for (const gateway of gateways) await gateway.stop('SIGKILL');
    stuckStore = new MongoStore({ uri: db.MONGODB_URI, dbName: stuckDb.MONGODB_DB });
    await stuckStore.init();
    const admin = createAdmin(stuckStore);
    ({ token: stuckToken } = await admin.createUser('stuck'));
    await admin.addProject('stuck', STUCK_URL, { locations: ['london'], runs: 1 });
    await admin.addProject('stuck', 'https://nowhere.example/', { locations: ['sao_paulo'], runs: 1 });
  });
  afterAll(async () => {
    await stuckStore?.close();
  });
  it("recorded in its user's backlog, then the gateway died before admitting it: the lease holder admits it and it ends done", async () => {
    const { id } = await recordedUpdate(stuckStore, { admitted: false });
    const gateway = await startGatewayProcess({ ...stuckDb, ...SWEEPING });
    try {
      await vi.waitFor(async () => expect((await stuckStatus(gateway.url, id)).status).toBe('done'), {
        timeout: 30_000,
        interval: 250,
      });
      expect(gateway.process.output()).toMatch(/admitted updates waiting in a user's backlog/);
    } finally {
      await gateway.process.stop('SIGKILL');
    }
  }, 60_000);

  it('admitted, then the gateway died before queueing it: the lease holder queues it again and it ends done', async () => {
    const { id } = await recordedUpdate(stuckStore);
    const gateway = await startGatewayProcess({ ...stuckDb, ...SWEEPING });
    try {
      await vi.waitFor(async () => expect((await stuckStatus(gateway.url, id)).status).toBe('done'), {
        timeout: 30_000,
        interval: 250,
      });
      expect(gateway.process.output()).toMatch(/stuck update queued again/);
    } finally {
      await gateway.process.stop('SIGKILL');
    }
  }, 60_000);

  it('its last allowed delivery died with its gateway: the next gateway ends it failed, saying why', async () => {
    const first = await startGatewayProcess({ ...stuckDb, ...SWEEPING, UPDATE_MAX_DELIVER: '1' });
    const before = runner.requests.length;
    const res = await fetch(`${first.url}/v1/update?url=${encodeURIComponent(STUCK_URL)}&mode=async&device=mobile`, {
      headers: { Authorization: stuckToken },
    });
    const { id } = (await res.json()) as { id: string };
    await vi.waitFor(() => expect(runner.requests.length).toBe(before + 1), { timeout: 10_000 });
    await first.process.stop('SIGKILL');
    const second = await startGatewayProcess({ ...stuckDb, ...SWEEPING, UPDATE_MAX_DELIVER: '1' });
    try {
      await vi.waitFor(async () => expect((await stuckStatus(second.url, id)).status).toBe('failed'), {
        timeout: 30_000,
        interval: 250,
      });
      expect((await stuckStatus(second.url, id)).reason).toMatch(/1 deliveries ended without an outcome/);
    } finally {
      await second.process.stop('SIGKILL');
    }
  }, 60_000);

  it('its snapshot was stored but its ending was not recorded: the next delivery records it done and measures nothing again', async () => {
    const gateway = await startGatewayProcess({ ...stuckDb, ...SWEEPING });
    try {
      // The snapshot first: the sweep (every 300 ms) must never see this update without it, or
      // it would queue the update again and a run would be measured before the test's delivery.
      const id = randomUUID();
      const project = (await stuckStore.listProjects()).find((p) => p.url === STUCK_URL)!;
      const date = await stuckStore.saveSnapshot({
        project,
        updateId: id,
        date: new Date(Math.floor(Date.now() / 1000) * 1000 - 3_600_000),
        updateType: 'manual',
        results: [],
      });
      const before = runner.requests.length;
      await recordedUpdate(stuckStore, { id });
      await stuckStore.setUpdateState(id, { status: 'running' });
      // The job, still in the queue as an unacknowledged delivery leaves it.
      await jetstream(agentConn).publish(
        updateSubject(id),
        JSON.stringify({
          updateId: id,
          userId: project.userId,
          url: STUCK_URL,
          devices: ['mobile'],
          updateType: 'manual',
          requestId: 'unrecorded',
        }),
        { msgID: id },
      );
      await vi.waitFor(async () => expect((await stuckStatus(gateway.url, id)).status).toBe('done'), {
        timeout: 30_000,
        interval: 250,
      });
      expect((await stuckStatus(gateway.url, id)).date).toBe(formatApiDateTime(date));
      expect(runner.requests.length).toBe(before);
    } finally {
      await gateway.process.stop('SIGKILL');
    }
  }, 60_000);

  it('a location that never answers: the update ends failed at its deadline, with the reason', async () => {
    const gateway = await startGatewayProcess({ ...stuckDb, UPDATE_DEADLINE_MS: '3000', ...SWEEPING });
    try {
      const res = await fetch(
        `${gateway.url}/v1/update?url=${encodeURIComponent('https://nowhere.example/')}&mode=async&device=mobile`,
        { headers: { Authorization: stuckToken } },
      );
      const { id } = (await res.json()) as { id: string };
      const started = Date.now();
      await vi.waitFor(async () => expect((await stuckStatus(gateway.url, id)).status).toBe('failed'), {
        timeout: 30_000,
        interval: 250,
      });
      expect((await stuckStatus(gateway.url, id)).reason).toMatch(/sao_paulo/);
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      await gateway.process.stop('SIGKILL');
    }
  }, 60_000);
});

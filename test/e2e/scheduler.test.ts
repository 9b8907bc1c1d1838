import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createAdmin, MongoStore, tickUpdateId, type ProjectRecord } from '@perfwatch/gateway';
import { freePort } from '../support/local-servers.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, silentLogger } from '../support/test-services.ts';

// Two gateway processes, three projects scheduled every 2 s: each tick of each project is
// updated exactly once while both run; when the lease holder is killed, the other takes over
// after the lease's TTL and runs the latest missed tick once, not every missed tick.

const TICK_MS = 2_000;
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let store: MongoStore;
let mongo: MongoClient;
let agentConn: NatsConnection;
let agent: Agent;
const gateways: PerfwatchProcess[] = [];
const db = { MONGODB_URI: '', MONGODB_DB: `pwsched_${randomUUID().slice(0, 8)}` };
let userId: string;
let projects: ProjectRecord[];

beforeAll(async () => {
  db.MONGODB_URI = inject('mongoUri');
  nats = await isolatedNats();
  store = new MongoStore({ uri: db.MONGODB_URI, dbName: db.MONGODB_DB });
  await store.init();
  mongo = new MongoClient(db.MONGODB_URI);
  const admin = createAdmin(store);
  await admin.createUser('sched');
  userId = (await store.findUserByName('sched'))!.id;
  projects = [];
  for (const i of [1, 2, 3])
    projects.push(
      await admin.addProject('sched', `https://sched-${i}.example/`, {
        locations: ['london'],
        runs: 1,
        schedule: '*/2 * * * * *',
      }),
    );
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({ delayMs: 10 }),
    logger: silentLogger,
    agentId: 'sched-london',
    capacity: 4,
  });
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const gateway = spawnPerfwatch(['gateway'], {
      ...db,
      NATS_URL: nats.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      SCHEDULER_INTERVAL_MS: '250',
      SCHEDULER_LEASE_TTL_MS: '4500',
      UPDATE_ACK_WAIT_MS: '2000',
      // What the killed lease holder leaves half done (an update recorded but not yet queued, or an
      // admission it was to make) is the sweep's to finish after this grace: 120 s by default, past
      // this test's wait. Under the full suite the kill landed in such a window (an update stayed
      // queued).
      UPDATE_STUCK_AFTER_MS: '3000',
      SHUTDOWN_READINESS_DELAY_MS: '0',
    });
    gateways.push(gateway);
    await gateway.waitFor(/gateway listening/);
  }
});

afterAll(async () => {
  for (const gateway of gateways) await gateway.stop('SIGKILL');
  await agent?.stop();
  await agentConn?.drain();
  await mongo?.close();
  await store?.close();
  await nats?.dispose();
});

/** Which of a project's ticks in [from, to] have an update, in order. */
async function handledTicks(project: ProjectRecord, from: number, to: number): Promise<number[]> {
  const handled: number[] = [];
  for (let t = Math.ceil(from / TICK_MS) * TICK_MS; t <= to; t += TICK_MS) {
    if (await store.findUpdate(userId, tickUpdateId(project.id, new Date(t)))) handled.push(t);
  }
  return handled;
}

async function scheduledIds(project: ProjectRecord): Promise<string[]> {
  const docs = await mongo
    .db(db.MONGODB_DB)
    .collection<{ _id: string }>('updates')
    .find({ projectId: new ObjectId(project.id), updateType: 'scheduled' }, { projection: { _id: 1 } })
    .toArray();
  return docs.map((d) => d._id);
}

describe('scheduler', () => {
  it('updates each due project once per tick, and once on take-over when the lease holder dies', async () => {
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 9_000));
    const lease = await mongo
      .db(db.MONGODB_DB)
      .collection<{ _id: string; holder: string }>('leases')
      .findOne({ _id: 'scheduler' });
    const holderPid = Number(lease!.holder.split('-').at(-2));
    const holder = gateways.find((g) => g.child.pid === holderPid)!;
    expect(holder).toBeDefined();

    // Both gateways up: every tick since the first one handled, each once.
    const killedAt = Date.now();
    for (const project of projects) {
      const ticks = await handledTicks(project, started + TICK_MS, killedAt - 500);
      expect(ticks.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < ticks.length; i++) expect(ticks[i]! - ticks[i - 1]!).toBe(TICK_MS);
    }
    await holder.stop('SIGKILL');

    // The other gateway takes the lease once it runs out, and ticks resume.
    await vi.waitFor(
      async () => {
        const now = await mongo
          .db(db.MONGODB_DB)
          .collection<{ _id: string; holder: string }>('leases')
          .findOne({ _id: 'scheduler' });
        expect(Number(now!.holder.split('-').at(-2))).not.toBe(holderPid);
      },
      { timeout: 15_000, interval: 250 },
    );
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const end = Date.now();

    for (const project of projects) {
      const ticks = await handledTicks(project, started + TICK_MS, end - 500);
      const gaps = ticks.slice(1).map((t, i) => t - ticks[i]!);
      // A gap where the lease ran out, and the ticks missed in it were not run late, one by one.
      // (Elsewhere a pass slower than a tick, on a loaded machine, also skips to the latest tick:
      // by design, so only the gap across the kill is required.)
      expect(ticks.slice(1).some((t, i) => ticks[i]! <= killedAt && t > killedAt && t - ticks[i]! > TICK_MS)).toBe(
        true,
      );
      expect(gaps.every((g) => g >= TICK_MS)).toBe(true);
      expect(ticks.some((t) => t > killedAt + TICK_MS)).toBe(true);
      // No scheduled update but these ticks' (one each). The scheduler runs on meanwhile: the
      // ticks are read after the updates, so a tick handled in between is among them too.
      const ids = await scheduledIds(project);
      const tickIds = new Set(
        (await handledTicks(project, started - 10 * TICK_MS, Date.now() + 10 * TICK_MS)).map((t) =>
          tickUpdateId(project.id, new Date(t)),
        ),
      );
      expect(ids.filter((id) => !tickIds.has(id))).toEqual([]);
      expect(ids.length).toBeGreaterThanOrEqual(ticks.length);
    }
    // And they run to the end: every scheduled update done, one snapshot each. The scheduler
    // goes on ticking meanwhile, so this holds the ticks up to `end` and bounds the rest.
    await vi.waitFor(
      async () => {
        for (const project of projects) {
          const ticks = await handledTicks(project, started - 10 * TICK_MS, end);
          const updates = await Promise.all(
            ticks.map(async (t) => (await store.findUpdate(userId, tickUpdateId(project.id, new Date(t))))!),
          );
          expect(updates.filter((u) => u.status !== 'done').map((u) => u.status)).toEqual([]);
          const snapshotDates = new Set((await store.listSnapshots(project.id)).map((s) => s.date.getTime()));
          expect(new Set(updates.map((u) => u.date!.getTime())).size).toBe(updates.length);
          expect(updates.filter((u) => !snapshotDates.has(u.date!.getTime()))).toEqual([]);
          // No snapshot but a handled tick's: the ticks, read after the snapshots, include any made since.
          expect(snapshotDates.size).toBeLessThanOrEqual(
            (await handledTicks(project, started - 10 * TICK_MS, Date.now() + 10 * TICK_MS)).length,
          );
        }
      },
      { timeout: 30_000, interval: 500 },
    );
  }, 90_000);
});

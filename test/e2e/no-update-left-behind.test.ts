import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createAdmin, MongoStore, type ProjectRecord } from '@perfwatch/gateway';
import { chromesOf } from '../support/chrome-processes.ts';
import { spawnGateway, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { measuredWait } from '../support/measured-wait.ts';
import { isolatedNats } from '../support/test-services.ts';

// What issue 15's measurement did, as a test: real gateway and agent processes (real Chromium
// and Lighthouse) on a real JetStream nats-server and MongoDB-wire server. 8 async updates of
// a project measured from frankfurt and tokyo; the frankfurt agent is SIGKILLed mid-run, the
// gateway too; a new gateway starts at once and a new frankfurt agent 20 s after the kill.
// Every update must end done with both locations, and no Chrome may be left behind.
// Eight: two done before the kill, one under way in the killed agent's Chrome, five still queued
// when the gateway dies (each path of the faults taken at least once); more add runs, not paths.

const UPDATES = 8;
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let store: MongoStore;
let project: ProjectRecord;
let token: string;
const db = { MONGODB_URI: '', MONGODB_DB: `pwleft_${randomUUID().slice(0, 8)}` };
const processes: PerfwatchProcess[] = [];
const page = () => `${inject('siteUrl')}index.html`;

async function startGateway(): Promise<{ process: PerfwatchProcess; url: string }> {
  const gateway = await spawnGateway({
    ...db,
    NATS_URL: nats.url,
    UPDATE_ACK_WAIT_MS: '5000',
    UPDATE_RETRY_DELAY_MS: '1000',
  });
  processes.push(gateway.process);
  return gateway;
}

function startAgent(location: string, agentId: string): PerfwatchProcess {
  const agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: location,
    PERFWATCH_AGENT_ID: agentId,
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  processes.push(agent);
  return agent;
}

beforeAll(async () => {
  db.MONGODB_URI = inject('mongoUri');
  nats = await isolatedNats();
  store = new MongoStore({ uri: db.MONGODB_URI, dbName: db.MONGODB_DB });
  await store.init();
  const admin = createAdmin(store);
  ({ token } = await admin.createUser('left-behind'));
  project = await admin.addProject('left-behind', page(), { locations: ['frankfurt', 'tokyo'], runs: 1 });
});

afterAll(async () => {
  for (const process of processes) await process.stop('SIGKILL');
  await store?.close();
  await nats?.dispose();
});

describe('no update left behind', () => {
  it(`${UPDATES} async updates through an agent kill and a gateway kill all end done with every location, and no Chrome is left`, async () => {
    const first = await startGateway();
    const doomed = startAgent('frankfurt', 'frankfurt-1');
    const tokyo = startAgent('tokyo', 'tokyo-1');
    await Promise.all([doomed.waitFor(/agent serving location/), tokyo.waitFor(/agent serving location/)]);

    const ids: string[] = [];
    const submitted = performance.now();
    for (let i = 0; i < UPDATES; i++) {
      const res = await fetch(`${first.url}/v1/update`, {
        method: 'POST',
        headers: { Authorization: token, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: page(), device: 'desktop', mode: 'async' }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
      ids.push(((await res.json()) as { id: string }).id);
    }

    // Two frankfurt runs done, the third under way with its Chrome: kill the agent, then the gateway.
    await doomed.waitFor(/"msg":"run done"[\s\S]*"msg":"run done"/, 120_000);
    // What a frankfurt run takes on this machine now (its first included Chrome's start and the
    // calibration): the wait for the rest derives from it.
    const perRunMs = (performance.now() - submitted) / 2;
    await vi.waitFor(
      async () => expect((await chromesOf(doomed.child.pid!)).flatMap((c) => c.browsers).length).toBeGreaterThan(0),
      { timeout: 30_000, interval: 100 },
    );
    const doomedPid = doomed.child.pid!;
    const killedAt = Date.now();
    await doomed.stop('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await first.process.stop('SIGKILL');
    const second = await startGateway();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAt + 20_000 - Date.now())));
    const revived = startAgent('frankfurt', 'frankfurt-2');
    await revived.waitFor(/agent serving location/);

    await vi.waitFor(
      async () => {
        const states = await Promise.all(
          ids.map(
            async (id) =>
              (await (await fetch(`${second.url}/v1/updates/${id}`, { headers: { Authorization: token } })).json()) as {
                status: string;
                missing: unknown[];
                reason: string | null;
              },
          ),
        );
        const unfinished = states.filter((s) => s.status !== 'done' && s.status !== 'failed');
        expect(unfinished.length, `${unfinished.length} unfinished`).toBe(0);
        expect(states.filter((s) => s.status === 'failed').map((s) => s.reason)).toEqual([]);
        expect(states.map((s) => s.missing)).toEqual(ids.map(() => []));
      },
      // The runs left at frankfurt, each with its re-tests (MAX_RETESTS 2) at the measured pace,
      // after the 20 s without an agent.
      { timeout: 20_000 + measuredWait(perRunMs, (UPDATES - 2) * 3, { slack: 2 }), interval: 2_000 },
    );

    const snapshots = await store.listSnapshots(project.id);
    expect(snapshots).toHaveLength(UPDATES);
    for (const snapshot of snapshots) {
      expect(snapshot.available.map((a) => `${a.device}/${a.location}`).sort(), snapshot.date.toISOString()).toEqual([
        'desktop/frankfurt',
        'desktop/tokyo',
      ]);
    }

    // The killed agent's Chrome was reaped by its successor; the others end with their agents.
    expect((await chromesOf(doomedPid)).flatMap((c) => c.pids)).toEqual([]);
    const survivors = [revived, tokyo];
    const pids = survivors.map((p) => p.child.pid!);
    for (const agent of survivors) expect(await agent.stop('SIGTERM')).toBe(0);
    for (const pid of pids) expect((await chromesOf(pid)).flatMap((c) => c.pids)).toEqual([]);
  }, 1_200_000);
});

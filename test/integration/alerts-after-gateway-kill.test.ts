import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, onTestFailed } from 'vitest';
import { auditResultSchema, formatApiDateTime, webhookPayloadSchema, type WebhookPayload } from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createApiClient } from '@perfwatch/client';
import { createAdmin, MongoStore, SqliteStore, type Store } from '@perfwatch/gateway';
import { freePort } from '../support/local-servers.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { measuredWait } from '../support/measured-wait.ts';
import { spawnGateway, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, silentLogger } from '../support/test-services.ts';

// Alerts that outlive the gateway that owed them. A real `perfwatch gateway` process on a real
// nats-server and a real store (the MongoDB-wire server, and the embedded SQLite file) stores a
// sync update's snapshot whose budget fails, and is SIGKILLed (PERFWATCH_TEST_KILL_AT) before it
// writes the alert to its webhook outbox; the next gateway delivers it to a real HTTP receiver,
// once. Then a gateway dies after its outbox write but before recording it: the sweep that finds
// the snapshot still owed announces it again, and the receiver still gets each event once.
// The agent's Lighthouse is the fixture runner: the subject is the gateway.

const URL_ = 'https://alerts-kill.example/';
/** LCP of the fixture runs is seconds: a budget of 1 ms fails every run, the confirmation too. */
const FAILING = { budgets: { lcp: 1 }, maxRegression: {} };
const PASSING = { budgets: { lcp: 600_000 }, maxRegression: {} };

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let agentConn: NatsConnection;
let agent: Agent;
let receiver: Server;
let receiverUrl: string;
const received: Array<{ payload: WebhookPayload; delivery: string }> = [];
const gateways: PerfwatchProcess[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        payload: webhookPayloadSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8'))),
        delivery: String(req.headers['x-perfwatch-delivery']),
      });
      res.end();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${port}/hook`;
  nats = await isolatedNats();
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({ delayMs: 100 }),
    logger: silentLogger,
    agentId: 'london-alerts-kill',
    announceIntervalMs: 1_000,
  });
}, 60_000);

afterAll(async () => {
  for (const gateway of gateways) await gateway.stop('SIGKILL');
  await agent?.stop();
  await agentConn?.drain();
  await nats?.dispose();
  await new Promise((resolve) => receiver?.close(resolve));
});

beforeEach(() => {
  onTestFailed(() => console.error(gateways.map((g) => g.output().slice(-4000)).join('\n---\n')));
});

/** A store of each kind, each in a place of its own; `env` points a gateway at it. */
const STORES = [
  {
    name: 'the MongoDB-wire store (FerretDB)',
    async create() {
      const db = `pwkill_${randomUUID().slice(0, 8)}`;
      const uri = inject('mongoUri');
      return {
        env: { MONGODB_URI: uri, MONGODB_DB: db },
        open: async (): Promise<Store> => {
          const store = new MongoStore({ uri, dbName: db });
          await store.init();
          return store;
        },
        dispose: async () => undefined,
      };
    },
  },
  {
    name: 'the embedded SQLite store',
    async create() {
      const dir = await mkdtemp(join(tmpdir(), 'perfwatch-alerts-kill-'));
      return {
        // One process owns the file: the test opens it only while no gateway runs.
        env: { PERFWATCH_DATA_DIR: dir },
        open: async (): Promise<Store> => {
          const store = new SqliteStore({ path: join(dir, 'perfwatch.sqlite') });
          await store.init();
          return store;
        },
        dispose: () => rm(dir, { recursive: true, force: true }),
      };
    },
  },
];

describe.each(STORES)('alerts and a gateway killed while it stores them, on $name', ({ create }) => {
  let place: Awaited<ReturnType<(typeof STORES)[number]['create']>>;
  let token: string;
  let webhookId: string;
  let projectId: string;

  /** Opens the store while no gateway runs, does `work` with it, closes it. */
  async function withStore<T>(work: (store: Store) => Promise<T>): Promise<T> {
    const store = await place.open();
    try {
      return await work(store);
    } finally {
      await store.close();
    }
  }

  const startGateway = async (extra: Record<string, string> = {}) => {
    const gateway = await spawnGateway({
      ...place.env,
      NATS_URL: nats.url,
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PUBLIC_URL: 'https://perfwatch.example/',
      MAX_RETESTS: '0',
      WEBHOOK_POLL_MS: '100',
      // The sweep as often as allowed, a killed gateway's lease soon free, and a short grace
      // for a live writer between its save and its outbox write.
      SCHEDULER_INTERVAL_MS: '200',
      SCHEDULER_LEASE_TTL_MS: '1000',
      UPDATE_SWEEP_EVERY_MS: '200',
      UPDATE_STUCK_AFTER_MS: '1000',
      ...extra,
    });
    gateways.push(gateway.process);
    return gateway;
  };

  const update = (base: string) =>
    fetch(`${base}/v1/update?url=${encodeURIComponent(URL_)}&device=mobile`, { headers: { Authorization: token } });

  /** Resolves once the process has exited, with the signal that ended it. */
  const exited = (process: PerfwatchProcess) =>
    process.child.exitCode !== null || process.child.signalCode !== null
      ? Promise.resolve(process.child.signalCode)
      : new Promise<NodeJS.Signals | null>((resolve) => process.child.once('exit', (_code, signal) => resolve(signal)));

  /** A sync update on a gateway that kills itself at `at`: the caller's request fails with the connection. */
  async function updateKilledAt(at: 'snapshot-saved' | 'alerts-queued'): Promise<number> {
    const gateway = await startGateway({ PERFWATCH_TEST_KILL_AT: at });
    if (!webhookId) {
      const { created } = await createApiClient({ server: gateway.url, token }).webhooks({
        targetUrl: receiverUrl,
        project: URL_,
      });
      webhookId = created!.id;
    }
    const started = performance.now();
    await expect(update(gateway.url)).rejects.toThrow();
    expect(await exited(gateway.process)).toBe('SIGKILL');
    expect(gateway.process.output()).toContain('PERFWATCH_TEST_KILL_AT reached');
    return performance.now() - started;
  }

  const swept = async (base: string) => {
    const text = await (await fetch(`${base}/metrics`)).text();
    return Number(/^perfwatch_alert_announcements_total\{outcome="swept"\} (\d+)$/m.exec(text)?.[1] ?? 0);
  };

  const events = (event: WebhookPayload['event']) => received.filter((r) => r.payload.event === event);

  beforeAll(async () => {
    received.length = 0;
    place = await create();
    await withStore(async (store) => {
      const admin = createAdmin(store);
      ({ token } = await admin.createUser('pager'));
      projectId = (await admin.addProject('pager', URL_, { locations: ['london'], runs: 1 })).id;
      await admin.setBudgets('pager', URL_, FAILING);
    });
  });

  afterAll(async () => {
    await place?.dispose();
  });

  it("delivers the alert of a snapshot whose gateway was SIGKILLed before its outbox write, once, and a later failing snapshot's not again", async () => {
    // 1. Killed between the save and the outbox write: the snapshot and its event are stored, no delivery.
    const updateMs = await updateKilledAt('snapshot-saved');
    const stored = await withStore(async (store) => {
      const [summary, ...more] = await store.listSnapshots(projectId);
      expect(more).toEqual([]);
      const snapshot = (await store.findSnapshot(projectId, summary!.date))!;
      expect(snapshot.results[0]!.checks).toEqual([
        expect.objectContaining({ key: 'lcp', pass: false, state: 'failing', event: 'budget.failed' }),
      ]);
      expect(await store.listDeliveries(webhookId, 10)).toEqual([]);
      return snapshot;
    });

    // 2. The next gateway announces it: the receiver gets budget.failed of that snapshot.
    const restarted = performance.now();
    const gateway = await startGateway();
    const deadline = measuredWait(updateMs, 3);
    await expect.poll(() => events('budget.failed').length, { timeout: deadline, interval: 100 }).toBe(1);
    const reannouncedMs = performance.now() - restarted;
    const snapshotDate = formatApiDateTime(stored.date);
    expect(events('budget.failed')[0]!.payload).toEqual({
      event: 'budget.failed',
      project: URL_,
      device: 'mobile',
      location: 'london',
      snapshotDate,
      checks: stored.results[0]!.checks,
      dashboardUrl: `https://perfwatch.example/#/snapshot?${new URLSearchParams({ url: URL_, date: snapshotDate })}`,
    });
    await expect.poll(() => swept(gateway.url), { timeout: deadline, interval: 100 }).toBe(1);

    // 3. A second snapshot failing the same check: stored failing, announcing nothing.
    const second = await update(gateway.url);
    expect(second.status).toBe(200);
    const cell = auditResultSchema.parse(await second.json()).mobile!.london!;
    expect(cell.checks).toEqual([expect.objectContaining({ key: 'lcp', pass: false, state: 'failing' })]);
    expect(cell.checks![0]!.event).toBeUndefined();
    // As long again as the restarted gateway took to announce the first: room for any sweep to act.
    await new Promise((resolve) => setTimeout(resolve, 2 * reannouncedMs));
    expect(received.map((r) => r.payload.event)).toEqual(['budget.failed']);
    expect(await swept(gateway.url)).toBe(1);
    await gateway.process.stop('SIGTERM');
    await withStore(async (store) => {
      expect((await store.listDeliveries(webhookId, 10)).map((d) => [d.event, d.status])).toEqual([
        ['budget.failed', 'delivered'],
      ]);
      expect(await store.listUnannouncedSnapshots(new Date(Date.now() + 60_000), 10)).toEqual([]);
    });
  }, 180_000);

  it('sends nothing twice when a gateway dies after its outbox write, before recording it: the sweep announces the snapshot again under the same delivery ids', async () => {
    await withStore(async (store) => {
      await store.setProjectBudgets(projectId, PASSING);
    });
    // The check passes while its state is failing: budget.recovered, queued, then the kill.
    const updateMs = await updateKilledAt('alerts-queued');
    const owed = await withStore(async (store) => {
      expect((await store.listDeliveries(webhookId, 10)).map((d) => [d.event, d.status])).toEqual([
        ['budget.recovered', 'pending'],
        ['budget.failed', 'delivered'],
      ]);
      return store.listUnannouncedSnapshots(new Date(Date.now() + 60_000), 10);
    });
    expect(owed).toHaveLength(1);

    const gateway = await startGateway();
    const deadline = measuredWait(updateMs, 3);
    // The sweep has announced it again, and the pending delivery has gone out.
    await expect.poll(() => swept(gateway.url), { timeout: deadline, interval: 100 }).toBe(1);
    await expect.poll(() => events('budget.recovered').length, { timeout: deadline, interval: 100 }).toBe(1);
    await gateway.process.stop('SIGTERM');
    await withStore(async (store) => {
      expect((await store.listDeliveries(webhookId, 10)).map((d) => [d.event, d.status])).toEqual([
        ['budget.recovered', 'delivered'],
        ['budget.failed', 'delivered'],
      ]);
      expect(await store.listUnannouncedSnapshots(new Date(Date.now() + 60_000), 10)).toEqual([]);
    });
    expect(received.map((r) => r.payload.event)).toEqual(['budget.failed', 'budget.recovered']);
    expect(new Set(received.map((r) => r.delivery)).size).toBe(2);
  }, 180_000);
});

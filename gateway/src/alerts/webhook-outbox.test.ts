import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lighthouseKpis, type CellCheck } from '@perfwatch/common';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { newCell } from '../../../test/support/new-cells.ts';
import { SqliteStore } from '../store/sqlite-store.ts';
import type { ProjectRecord } from '../store/store.ts';
import { createWebhookOutbox, type AlertAnnouncement } from './webhook-outbox.ts';

// The outbox's part in alerts that nothing loses, on the embedded store: a snapshot stored with
// an event owes it until its deliveries are written; announcing it again writes nothing new.
const logger = pino({ level: 'silent' });
let store: SqliteStore;
let project: ProjectRecord;

const failed: CellCheck = {
  key: 'lcp',
  kind: 'budget',
  actual: 3180,
  limit: 2500,
  pass: false,
  message: 'LCP 3180 ms, budget at most 2500 ms',
  state: 'failing',
  confirmation: { actual: 3090, pass: false },
  event: 'budget.failed',
};

function cell(checks: CellCheck[]) {
  const lighthouse = loadLhr('mobile', 1);
  return newCell({
    device: 'mobile',
    location: 'london',
    median: 1,
    runs: [],
    lighthouse,
    crux: { url: null },
    elementCount: 1,
    kpis: lighthouseKpis(lighthouse),
    checks,
  });
}

/** Stores a snapshot of `project` whose one cell has `checks`; what the outbox is told of it. */
async function stored(updateId: string, checks: CellCheck[]) {
  const results = [cell(checks)];
  const date = await store.saveSnapshot({
    project,
    updateId,
    date: new Date('2026-06-01T10:00:00Z'),
    updateType: 'manual',
    results,
  });
  return { project, updateId, date, results };
}

const owed = async () =>
  (await store.listUnannouncedSnapshots(new Date(Date.now() + 60_000), 100)).map((s) => s.updateId);

function outboxOn(on: Parameters<typeof createWebhookOutbox>[0]['store']) {
  const counted: AlertAnnouncement[] = [];
  const outbox = createWebhookOutbox({
    store: on,
    logger,
    publicUrl: 'https://pw.example',
    onAnnouncement: (outcome) => counted.push(outcome),
  });
  return { outbox, counted };
}

beforeAll(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  const user = await store.createUser('pager');
  project = await store.addProject({
    userId: user.id,
    url: 'https://shop.example/',
    domain: 'shop.example',
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
});
afterAll(async () => {
  await store.close();
});

describe('the webhook outbox and stored snapshots', () => {
  it('writes a snapshot’s events once and records it announced; announcing it again (the sweep) writes nothing new', async () => {
    const hook = await store.addWebhook({
      userId: project.userId,
      targetUrl: 'https://hooks.example/a',
      projectUrl: null,
      format: 'json',
      secret: 'pwhs_a',
    });
    const snapshot = await stored('once', [failed]);
    expect(await owed()).toEqual(['once']);
    const { outbox, counted } = outboxOn(store);
    expect(await outbox.snapshotStored(snapshot)).toBe(1);
    expect(await owed()).toEqual([]);
    const [delivery] = await store.listDeliveries(hook.id, 10);
    expect(delivery).toMatchObject({ event: 'budget.failed', status: 'pending' });
    // A sweep that finds it again (a gateway died before recording it announced) stores the same id.
    await outbox.snapshotStored(snapshot, { storedAt: new Date() });
    expect((await store.listDeliveries(hook.id, 10)).map((d) => d.id)).toEqual([delivery!.id]);
    expect(counted).toEqual(['queued', 'swept']);
    await store.removeWebhook(project.userId, hook.id);
  });

  it('counts an outbox write that fails as deferred and leaves the snapshot owed, for the sweep', async () => {
    const snapshot = await stored('deferred', [failed]);
    // The store's own methods, run on the store itself (its private fields), but its outbox write fails.
    const broken = new Proxy(store, {
      get: (target, name) => {
        if (name === 'enqueueDeliveries') return () => Promise.reject(new Error('the database went away'));
        const value = Reflect.get(target, name) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    await store.addWebhook({
      userId: project.userId,
      targetUrl: 'https://hooks.example/b',
      projectUrl: null,
      format: 'json',
      secret: 'pwhs_b',
    });
    const { outbox, counted } = outboxOn(broken);
    await expect(outbox.snapshotStored(snapshot)).rejects.toThrow('the database went away');
    expect(counted).toEqual(['deferred']);
    expect(await owed()).toEqual(['deferred']);
    await store.markSnapshotAnnounced('deferred');
  });

  it('sends a late announcement only to the webhooks that existed when the snapshot was stored', async () => {
    const snapshot = await stored('late', [failed]);
    const storedAt = new Date();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const added = await store.addWebhook({
      userId: project.userId,
      targetUrl: 'https://hooks.example/new',
      projectUrl: null,
      format: 'json',
      secret: 'pwhs_new',
    });
    const { outbox } = outboxOn(store);
    await outbox.snapshotStored(snapshot, { storedAt });
    expect(await store.listDeliveries(added.id, 10)).toEqual([]);
    expect(await owed()).toEqual([]);
  });

  it('owes nothing for a snapshot without events, and writes nothing for it', async () => {
    const { event: _announced, ...stillFailing } = failed;
    const quiet = await stored('quiet', [stillFailing]);
    expect(await owed()).toEqual([]);
    const { outbox, counted } = outboxOn(store);
    expect(await outbox.snapshotStored(quiet)).toBe(0);
    expect(counted).toEqual([]);
  });
});

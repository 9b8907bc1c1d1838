import { MongoClient, ObjectId, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { MongoStore } from '@perfwatch/gateway';
import { storedResult } from '../store/store-backends.ts';
import { isolatedNats, startTestGateway, testStore } from '../support/test-services.ts';
import { kpiRows } from '../support/kpi-rows.ts';

// The MongoDB store against a real MongoDB-wire server (FerretDB here, MongoDB where Docker runs).
let store: MongoStore;
// The store's own database, read and written directly where a test sets up or checks what the store cannot show.
let raw: MongoClient;
let db: Db;
beforeAll(async () => {
  store = await testStore();
  raw = new MongoClient(inject('mongoUri'));
  db = raw.db(store.dbName);
});
afterAll(async () => {
  await raw?.close();
  await store?.close();
});

describe('MongoStore', () => {
  it('writes one snapshot per update: a write cut short (the `writing` mark) is replaced, its KPI records with it', async () => {
    const user = await store.createUser('fay-mongo');
    const project = await store.addProject({
      userId: user.id,
      url: 'https://fay.example/',
      domain: 'fay.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    // A gateway that died between its KPI records and the `complete` mark left a `writing`
    // snapshot: the next delivery clears it and writes the update once.
    const orphan = new ObjectId();
    const later = new Date('2026-04-02T09:00:00Z');
    await db.collection('snapshots').insertOne({
      _id: orphan,
      projectId: new ObjectId(project.id),
      userId: new ObjectId(user.id),
      updateId: 'cut-short',
      url: project.url,
      domain: project.domain,
      date: later,
      updateType: 'scheduled',
      available: [],
      status: 'writing',
      createdAt: new Date(),
    });
    await db.collection('kpis').insertOne({
      snapshotId: orphan,
      projectId: new ObjectId(project.id),
      userId: new ObjectId(user.id),
      date: later,
      section: 'LIGHTHOUSE',
      kpi: 'performance',
      data: { value: 1 },
    });
    const rewritten = await store.saveSnapshot({
      project,
      updateId: 'cut-short',
      date: later,
      updateType: 'scheduled',
      results: [storedResult('mobile', 'london')],
    });
    expect(rewritten).toEqual(later);
    expect(await db.collection('kpis').countDocuments({ snapshotId: orphan })).toBe(0);
    expect(await db.collection('snapshots').countDocuments({ updateId: 'cut-short' })).toBe(1);
    expect((await store.findSnapshot(project.id, later))!.results).toHaveLength(1);
  });

  it('a redelivery racing a slow live write: one snapshot, no duplicate or orphan KPI record, nothing pending shown', async () => {
    const user = await store.createUser('race');
    const project = await store.addProject({
      userId: user.id,
      url: 'https://race.example/',
      domain: 'race.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const date = new Date('2026-04-03T09:00:00Z');
    // The live writer: many results (seconds of gzip and inserts), so it is still writing when
    // the redelivery comes; on a machine loaded enough that it finishes first, the redelivery
    // must find its snapshot complete instead. Either way: one snapshot, no stray record.
    const many = 200;
    const slow = store
      .saveSnapshot({
        project,
        updateId: 'raced',
        date,
        updateType: 'scheduled',
        results: Array.from({ length: many }, () => storedResult('mobile', 'london')),
      })
      .then(
        (d) => d,
        (e: unknown) => e,
      );
    await vi.waitFor(
      async () =>
        expect(await db.collection('snapshots').findOne({ updateId: 'raced', status: 'writing' })).not.toBeNull(),
      { timeout: 10_000, interval: 2 },
    );
    const redelivered = await store.saveSnapshot({
      project,
      updateId: 'raced',
      date,
      updateType: 'scheduled',
      results: [storedResult('mobile', 'london')],
    });
    const live = await slow;
    const fenced = live instanceof Error;
    console.info(`redelivery race: the live writer was ${fenced ? 'fenced off' : 'first to complete'}`);
    // Fenced: it stepped back, removing what it wrote. First: the redelivery wrote nothing.
    if (fenced) expect(live.message).toMatch(/being written by another delivery/);
    else expect(live).toEqual(redelivered);
    const snapshots = await db.collection('snapshots').find({ updateId: 'raced' }).toArray();
    expect(snapshots.map((s) => s['status'])).toEqual(['complete']);
    const kpis = await db
      .collection('kpis')
      .find({ projectId: new ObjectId(project.id) })
      .toArray();
    expect(new Set(kpis.map((k) => String(k['snapshotId'])))).toEqual(new Set([String(snapshots[0]!._id)]));
    expect(kpis).toHaveLength(storedResult('mobile', 'london').kpis.length * (fenced ? 1 : many));
    expect(kpis.filter((k) => k['pending'])).toEqual([]);
    expect(await db.collection('results').countDocuments({ projectId: new ObjectId(project.id) })).toBe(
      fenced ? 1 : many,
    );
    const rows = [];
    for (const row of await kpiRows(store, { userId: user.id, from: date, to: new Date(date.getTime() + 1000) }))
      rows.push(row);
    expect(rows).toHaveLength(kpis.length);
    expect(redelivered).toEqual(date);
  });

  it('the overview shows no record of a snapshot being written, and old records of snapshots that never completed are deleted', async () => {
    const user = await store.createUser('orphans');
    const project = await store.addProject({
      userId: user.id,
      url: 'https://orphans.example/',
      domain: 'orphans.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const date = new Date('2026-04-04T09:00:00Z');
    const base = {
      projectId: new ObjectId(project.id),
      userId: new ObjectId(user.id),
      date,
      domain: project.domain,
      url: project.url,
      device: 'mobile',
      location: 'london',
      updateType: 'manual',
      section: 'LIGHTHOUSE',
      kpi: 'performance',
      data: { value: 1 },
    };
    // An earlier version's orphan (no snapshot), written two hours ago, and a pending record of a writer at work now.
    const twoHoursAgo = ObjectId.createFromTime(Math.floor(Date.now() / 1000) - 7_200);
    await db.collection('kpis').insertOne({ _id: twoHoursAgo, snapshotId: new ObjectId(), ...base });
    await db.collection('kpis').insertOne({ snapshotId: new ObjectId(), ...base, pending: true });
    const rows = [];
    for (const row of await kpiRows(store, { userId: user.id, from: date, to: new Date(date.getTime() + 1000) }))
      rows.push(row);
    expect(rows).toHaveLength(1); // the old orphan, until it is deleted; never the pending one
    expect(await store.deleteOrphans(new Date(Date.now() - 3_600_000))).toBe(1);
    expect(await db.collection('kpis').countDocuments({ projectId: new ObjectId(project.id) })).toBe(1);
  });

  it('retention: the scheduler deletes snapshots past RETENTION_DAYS with their results and KPI records, and keeps the rest', async () => {
    const user = await store.createUser('ivy');
    const project = await store.addProject({
      userId: user.id,
      url: 'https://ivy.example/',
      domain: 'ivy.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const old = new Date(Date.now() - 401 * 86_400_000);
    old.setUTCMilliseconds(0);
    const recent = new Date(Date.now() - 399 * 86_400_000);
    recent.setUTCMilliseconds(0);
    await store.saveSnapshot({
      project,
      updateId: 'ivy-old',
      date: old,
      updateType: 'scheduled',
      results: [storedResult('mobile', 'london')],
    });
    await store.saveSnapshot({
      project,
      updateId: 'ivy-recent',
      date: recent,
      updateType: 'scheduled',
      results: [storedResult('mobile', 'london')],
    });
    const kpisOf = async (date: Date) => {
      const rows = [];
      for (const row of await kpiRows(store, { userId: user.id, from: date, to: new Date(date.getTime() + 1000) }))
        rows.push(row);
      return rows.length;
    };
    expect(await kpisOf(old)).toBeGreaterThan(0);
    const nats = await isolatedNats();
    const gateway = await startTestGateway({
      natsUrl: nats.url,
      store,
      config: { RETENTION_DAYS: 400, SCHEDULER_INTERVAL_MS: 200 },
    });
    try {
      await vi.waitFor(async () => expect(await store.findSnapshot(project.id, old)).toBeNull(), { timeout: 10_000 });
      expect(await kpisOf(old)).toBe(0);
      expect(await store.findSnapshot(project.id, recent)).not.toBeNull();
      expect(await kpisOf(recent)).toBeGreaterThan(0);
    } finally {
      await gateway.runtime.stop();
      await gateway.nc.drain();
      await nats.dispose();
    }
  });
});

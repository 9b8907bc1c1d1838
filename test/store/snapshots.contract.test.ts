import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { describe, expect, inject, it } from 'vitest';
import { MongoStore } from '@perfwatch/gateway';
import { type CellCheck } from '@perfwatch/common';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { kpiRows } from '../support/kpi-rows.ts';
import { MAX_DATE_SHIFT_SECONDS, NoFreeSnapshotDate } from '../../gateway/src/store/snapshot-dates.ts';
import { describeOnBothStores, storedResult } from './store-backends.ts';

// Snapshots written once per update, read whole or cell by cell, announced and aged out (SnapshotsStore, SnapshotReadsStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('snapshots', (store) => {
  it('stores a snapshot and reads it back at exactly its second, filtered by device and location', async () => {
    const user = await store().createUser('dave');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://dave.example/',
      domain: 'dave.example',
      locations: ['london', 'tokyo'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const date = new Date('2026-04-01T12:00:00Z');
    const missing = [
      { device: 'desktop' as const, location: 'tokyo' as const, reason: 'NO_RESPONDERS: no agent serves tokyo' },
    ];
    const stored = await store().saveSnapshot({
      project,
      updateId: 'u1',
      date,
      updateType: 'manual',
      results: [storedResult('mobile', 'london'), storedResult('mobile', 'tokyo'), storedResult('desktop', 'london')],
      missing,
    });
    expect(stored).toEqual(date);

    const all = await store().findSnapshot(project.id, date);
    expect(all!.results).toHaveLength(3);
    expect(all!.results[0]!.lighthouse).toEqual(loadLhr(all!.results[0]!.device, 1));
    expect(all!.available).toHaveLength(3);
    expect(all!.missing).toEqual(missing);
    expect(await store().findSnapshotOfUpdate('u1')).toEqual({ date, missing });
    expect(await store().findSnapshotOfUpdate('never-written')).toBeNull();

    const filtered = await store().findSnapshot(project.id, date, { device: 'mobile', locations: ['tokyo'] });
    expect(filtered!.results.map((r) => `${r.device}/${r.location}`)).toEqual(['mobile/tokyo']);
    expect(filtered!.available).toHaveLength(3);
    expect(filtered!.missing).toEqual(missing);

    expect(await store().findSnapshot(project.id, new Date(date.getTime() + 1000))).toBeNull();
  });

  it("reads a snapshot's cells without their results, each result fetched from the database when asked", async () => {
    const user = await store().createUser('dora');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://dora.example/',
      domain: 'dora.example',
      locations: ['london', 'tokyo'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const date = new Date('2026-04-02T12:00:00Z');
    const results = [
      storedResult('mobile', 'london'),
      storedResult('mobile', 'tokyo'),
      storedResult('desktop', 'london'),
    ];
    await store().saveSnapshot({ project, updateId: 'dora-1', date, updateType: 'manual', results });

    const whole = (await store().findSnapshot(project.id, date))!;
    const cells = (await store().findSnapshotCells(project.id, date))!;
    const { results: wholeResults, ...snapshot } = whole;
    expect({ ...cells, results: [] }).toEqual({ ...snapshot, results: [] });
    expect(cells.results).toHaveLength(3);
    for (const [i, cell] of cells.results.entries()) {
      const { resultJson: _read, stepJson: _step, ...shown } = cell;
      const { lighthouse: _lhr, lighthouseJson, kpis: _kpis, ...expected } = wholeResults[i]!;
      expect(shown).toEqual(expected);
      expect((await cell.resultJson()).equals(lighthouseJson)).toBe(true);
    }
    const filtered = await store().findSnapshotCells(project.id, date, { device: 'mobile', locations: ['tokyo'] });
    expect(filtered!.results.map((r) => `${r.device}/${r.location}`)).toEqual(['mobile/tokyo']);
    expect(await store().findSnapshotCells(project.id, new Date(date.getTime() + 1000))).toBeNull();

    // Read when asked, not when found: a result deleted in between is not there to read.
    await store().removeProject(user.id, project.url);
    await expect(filtered!.results[0]!.resultJson()).rejects.toThrow(/no longer stored/);
  });

  it("keeps each cell's artifact states, read back whole and cell by cell; a cell without any has none", async () => {
    const user = await store().createUser('artie');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://artie.example/',
      domain: 'artie.example',
      locations: ['london', 'tokyo'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const date = new Date('2026-04-03T12:00:00Z');
    const artifacts = {
      requests: { state: 'stored' as const, bytes: 5_123, truncated: true },
      trace: { state: 'missing' as const, reason: 'NO_ARTIFACT: agent a1 has no trace of this run' },
    };
    await store().saveSnapshot({
      project,
      updateId: 'artie-1',
      date,
      updateType: 'manual',
      results: [{ ...storedResult('mobile', 'london'), artifacts }, storedResult('mobile', 'tokyo')],
    });
    const whole = (await store().findSnapshot(project.id, date))!;
    expect(whole.results.map((r) => r.artifacts)).toEqual([artifacts, undefined]);
    const cells = (await store().findSnapshotCells(project.id, date))!;
    expect(cells.results.map((r) => r.artifacts)).toEqual([artifacts, undefined]);
  });

  it('moves a second snapshot in the same second to the next free second', async () => {
    const user = await store().createUser('erin');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://erin.example/',
      domain: 'erin.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const date = new Date('2026-04-01T12:00:00Z');
    const first = await store().saveSnapshot({
      project,
      updateId: 'a',
      date,
      updateType: 'manual',
      results: [storedResult('mobile', 'london')],
    });
    const second = await store().saveSnapshot({
      project,
      updateId: 'b',
      date,
      updateType: 'manual',
      results: [storedResult('mobile', 'london')],
    });
    expect(second.getTime() - first.getTime()).toBe(1000);
    expect((await store().findSnapshot(project.id, first))!.updateId).toBe('a');
    expect((await store().findSnapshot(project.id, second))!.updateId).toBe('b');
    // Every second of the next minute taken: the next one is refused by name, nothing written.
    // Each taken at its own second (not all at `date`, which made the store try 1 + 2 + … + 60
    // seconds: minutes on FerretDB on a slow machine, for nothing more proved).
    for (let n = 2; n <= MAX_DATE_SHIFT_SECONDS; n++)
      await store().saveSnapshot({
        project,
        updateId: `u${n}`,
        date: new Date(date.getTime() + n * 1000),
        updateType: 'manual',
        results: [],
      });
    await expect(
      store().saveSnapshot({ project, updateId: 'late', date, updateType: 'manual', results: [] }),
    ).rejects.toThrow(NoFreeSnapshotDate);
    expect(await store().findSnapshotOfUpdate('late')).toBeNull();
  });

  it('writes one snapshot per update: a repeated save returns the first; a write cut short is replaced, its KPI records with it', async () => {
    const user = await store().createUser('fay');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://fay.example/',
      domain: 'fay.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const date = new Date('2026-04-02T08:00:00Z');
    const first = await store().saveSnapshot({
      project,
      updateId: 'redelivered',
      date,
      updateType: 'scheduled',
      results: [storedResult('mobile', 'london')],
    });
    // The same update delivered again, a minute later: nothing new is written.
    const again = await store().saveSnapshot({
      project,
      updateId: 'redelivered',
      date: new Date(date.getTime() + 60_000),
      updateType: 'scheduled',
      results: [storedResult('mobile', 'london')],
    });
    expect(again).toEqual(first);
    expect(await store().listSnapshots(project.id)).toHaveLength(1);
  });

  it('deletes snapshots before a date with their results and KPI records, oldest first, at most `limit`', async () => {
    const user = await store().createUser('olga');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://olga.example/',
      domain: 'olga.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const at = (d: number) => new Date(Date.UTC(2025, 0, d));
    for (const d of [1, 2, 3])
      await store().saveSnapshot({
        project,
        updateId: `olga-${d}`,
        date: at(d),
        updateType: 'scheduled',
        results: [storedResult('mobile', 'london')],
      });
    expect(await store().deleteSnapshotsBefore(at(3), 1)).toBe(1);
    expect(await store().deleteSnapshotsBefore(at(3), 10)).toBe(1);
    expect((await store().listSnapshots(project.id)).map((s) => s.date)).toEqual([at(3)]);
    const rows = [];
    for (const row of await kpiRows(store(), { userId: user.id, from: at(1), to: at(4) })) rows.push(row);
    expect(new Set(rows.map((r) => r.date.getTime()))).toEqual(new Set([at(3).getTime()]));
  });

  it('marks a snapshot with budget events unannounced in the write that stores it, until its events are recorded in the outbox', async () => {
    const user = await store().createUser('owed-alerts');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://owed.example/',
      domain: 'owed.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const check = {
      key: 'lcp' as const,
      kind: 'budget' as const,
      actual: 3180,
      limit: 2500,
      pass: false,
      message: 'LCP 3180 ms, budget at most 2500 ms',
      state: 'failing' as const,
    };
    const save = (updateId: string, minute: number, checks?: CellCheck[]) =>
      store().saveSnapshot({
        project,
        updateId,
        date: new Date(`2026-06-02T10:0${minute}:00Z`),
        updateType: 'manual',
        results: [{ ...storedResult('mobile', 'london'), ...(checks ? { checks } : {}) }],
      });
    const before = new Date();
    const failed = await save('owed-failed', 1, [{ ...check, event: 'budget.failed' }]);
    const after = new Date();
    // Failing still, announced before: no event, nothing owed; nor by a snapshot without budgets.
    await save('owed-quiet', 2, [check]);
    await save('owed-none', 3);
    const mine = async (storedBefore: Date) =>
      (await store().listUnannouncedSnapshots(storedBefore, 1_000)).filter((s) => s.userId === user.id);
    const owed = await mine(new Date(after.getTime() + 60_000));
    expect(owed).toEqual([
      {
        projectId: project.id,
        userId: user.id,
        url: project.url,
        updateId: 'owed-failed',
        date: failed,
        storedAt: expect.any(Date),
      },
    ]);
    expect(owed[0]!.storedAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(owed[0]!.storedAt.getTime()).toBeLessThanOrEqual(after.getTime());
    // Stored after the time asked for (a live writer may be between its save and its outbox write).
    expect(await mine(new Date(before.getTime() - 1))).toEqual([]);
    await store().markSnapshotAnnounced('owed-failed');
    expect(await mine(new Date(after.getTime() + 60_000))).toEqual([]);
    // The update's job delivered again finds its snapshot stored: nothing is owed again.
    expect(await save('owed-failed', 1, [{ ...check, event: 'budget.failed' }])).toEqual(failed);
    expect(await mine(new Date(Date.now() + 60_000))).toEqual([]);
  });
});

describe('snapshots: a MongoDB cell whose artifact states do not parse', () => {
  it('reads back as a cell without artifacts, never failing the read', async () => {
    const uri = inject('mongoUri');
    const dbName = `pwtest_${randomUUID().slice(0, 8)}`;
    const client = await new MongoClient(uri).connect();
    const store = new MongoStore({ uri, dbName });
    try {
      await store.init();
      const owner = await store.createUser('mongo-bad-artifacts');
      const project = await store.addProject({
        userId: owner.id,
        url: 'https://bad-artifacts.example/',
        domain: 'bad-artifacts.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const date = new Date('2026-04-04T12:00:00Z');
      await store.saveSnapshot({
        project,
        updateId: 'bad-artifacts-1',
        date,
        updateType: 'manual',
        results: [{ ...storedResult('mobile', 'london'), artifacts: { requests: { state: 'stored', bytes: 10 } } }],
      });
      await client
        .db(dbName)
        .collection('results')
        .updateMany({}, { $set: { artifacts: { requests: { state: 'kept-somewhere', bytes: -1 } } } });
      const read = (await store.findSnapshot(project.id, date))!;
      expect(read.results).toHaveLength(1);
      expect(read.results[0]!.artifacts).toBeUndefined();
    } finally {
      await store.close();
      await client.db(dbName).dropDatabase();
      await client.close();
    }
  });
});

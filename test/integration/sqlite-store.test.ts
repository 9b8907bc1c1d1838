import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lighthouseKpis } from '@perfwatch/common';
import { SqliteStore } from '@perfwatch/gateway';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { newCell } from '../support/new-cells.ts';

// The embedded store of `perfwatch start`, on a real file, against the same contract as the MongoDB store.
let dir: string;
let store: SqliteStore;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-sqlite-'));
  store = new SqliteStore({ path: join(dir, 'data', 'perfwatch.sqlite') });
  await store.init();
});
afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SqliteStore', () => {
  it('keeps everything in its file: a store opened again finds users, projects and snapshots', async () => {
    const path = join(dir, 'reopen.sqlite');
    const first = new SqliteStore({ path });
    await first.init();
    const user = await first.createUser('rita');
    const project = await first.addProject({
      userId: user.id,
      url: 'https://rita.example/',
      domain: 'rita.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const lighthouse = loadLhr('desktop', 1);
    const date = new Date('2026-05-01T08:00:00Z');
    await first.saveSnapshot({
      project,
      updateId: 'r1',
      date,
      updateType: 'manual',
      results: [
        newCell({
          device: 'desktop',
          location: 'london',
          median: 1,
          runs: [],
          lighthouse,
          crux: { url: null },
          elementCount: 12,
          kpis: lighthouseKpis(lighthouse),
        }),
      ],
    });
    await first.close();

    const again = new SqliteStore({ path });
    await again.init();
    try {
      expect((await again.findUserByName('rita'))!.id).toBe(user.id);
      const snapshot = await again.findSnapshot(project.id, date);
      expect(snapshot!.results[0]!.lighthouse).toEqual(lighthouse);
      expect(snapshot!.results[0]!.elementCount).toBe(12);
    } finally {
      await again.close();
    }
  });

  it('keeps its file and WAL readable by its user only (0600), an existing file included', async () => {
    const path = join(dir, 'private', 'perfwatch.sqlite');
    const fresh = new SqliteStore({ path });
    await fresh.init();
    await fresh.createUser('pat');
    for (const file of [path, `${path}-wal`]) expect((await stat(file)).mode & 0o777, file).toBe(0o600);
    await fresh.close();
    await chmod(path, 0o644);
    const again = new SqliteStore({ path });
    await again.init();
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    await again.close();
  });

  it('opens a file of schema 1 (before `missing` and the backlog), keeping its rows: no cell missing, its updates admitted', async () => {
    const path = join(dir, 'schema1.sqlite');
    const first = new SqliteStore({ path });
    await first.init();
    const user = await first.createUser('sam');
    await first.addToken({ prefix: 'samtoken', userId: user.id, digest: 'e'.repeat(64) });
    const project = await first.addProject({
      userId: user.id,
      url: 'https://sam.example/',
      domain: 'sam.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const lighthouse = loadLhr('desktop', 1);
    const date = new Date('2026-05-02T08:00:00Z');
    await first.saveSnapshot({
      project,
      updateId: 's1',
      date,
      updateType: 'manual',
      results: [
        newCell({
          device: 'desktop',
          location: 'london',
          median: 1,
          runs: [],
          lighthouse,
          crux: { url: null },
          elementCount: 12,
          kpis: lighthouseKpis(lighthouse),
        }),
      ],
    });
    await first.createUpdate({
      id: 'up1',
      userId: user.id,
      projectId: project.id,
      url: project.url,
      devices: ['desktop'],
      locations: ['london'],
      updateType: 'manual',
      runs: 1,
    });
    await first.close();
    // Back to what schema 1 wrote: the same tables without the columns of schemas 2 to 7.
    const db = new DatabaseSync(path);
    db.exec(
      'ALTER TABLE projects DROP COLUMN budgets; ALTER TABLE results DROP COLUMN checks; ALTER TABLE snapshots DROP COLUMN kpi_version; ALTER TABLE projects DROP COLUMN auth;',
    );
    db.exec('DROP INDEX snapshots_alerts_pending; ALTER TABLE snapshots DROP COLUMN alerts_pending_since;');
    for (const table of ['snapshots', 'updates']) db.exec(`ALTER TABLE ${table} DROP COLUMN missing`);
    for (const column of ['runs', 'waiting', 'admitted_at']) db.exec(`ALTER TABLE updates DROP COLUMN ${column}`);
    db.exec('ALTER TABLE tokens DROP COLUMN expires_at');
    db.exec("UPDATE meta SET value = '1' WHERE key = 'schema'");
    db.close();

    const again = new SqliteStore({ path });
    await again.init();
    try {
      expect((await again.findSnapshot(project.id, date))!.missing).toEqual([]);
      const old = (await again.findUpdate(user.id, 'up1'))!;
      expect(old.missing).toEqual([]);
      // Schema 1 had no backlog: its updates were in the queue from their creation.
      expect(old.admittedAt).toEqual(old.createdAt);
      expect(old.runs).toBe(1);
      // Before schema 4: no budgets, results without checks.
      expect((await again.findProject(user.id, project.url))!.budgets).toEqual({ budgets: {}, maxRegression: {} });
      expect((await again.findSnapshot(project.id, date))!.results[0]!.checks).toBeUndefined();
      // Before schema 5: its KPI records are the seed's, version 1.
      expect(await again.listSnapshotsBelowKpiVersion(2, 10)).toEqual([{ projectId: project.id, date }]);
      // Before schema 8: its tokens never expire, and new ones may.
      expect((await again.findToken('samtoken'))!.expiresAt).toBeNull();
      const expiresAt = new Date('2030-01-01T00:00:00Z');
      await again.addToken({ prefix: 'samlater', userId: user.id, digest: 'f'.repeat(64), expiresAt });
      expect((await again.findToken('samlater'))!.expiresAt).toEqual(expiresAt);
      // Before schema 7: its snapshots owe no announcement.
      expect(await again.listUnannouncedSnapshots(new Date(Date.now() + 86_400_000), 10)).toEqual([]);
      const missing = [{ device: 'desktop' as const, location: 'london' as const, reason: 'TIMEOUT: no reply' }];
      await again.setUpdateState('up1', { status: 'done', date, missing });
      expect((await again.findUpdate(user.id, 'up1'))!.missing).toEqual(missing);
    } finally {
      await again.close();
    }
  });
});

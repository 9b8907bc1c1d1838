import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '@perfwatch/gateway';
import { kpiRows } from '../support/kpi-rows.ts';
import { storedResult } from '../store/store-backends.ts';

// Step 9 of the embedded store's schema (issue 32): a file of schema 8, whose updates, snapshots
// and KPI records have no revision column, opens with its rows read back without a revision,
// and takes new ones with it.
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-sqlite-revision-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SqliteStore, schema 8 to 9', () => {
  it('adds the revision columns, keeps the old rows without one, and stores new ones with it', async () => {
    const path = join(dir, 'schema8.sqlite');
    const first = new SqliteStore({ path });
    await first.init();
    const user = await first.createUser('rev8');
    const project = await first.addProject({
      userId: user.id,
      url: 'https://rev8.example/',
      domain: 'rev8.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const old = new Date('2026-05-02T08:00:00Z');
    await first.saveSnapshot({
      project,
      updateId: 'old',
      date: old,
      updateType: 'manual',
      results: [storedResult('desktop', 'london')],
    });
    await first.createUpdate({
      id: 'old-update',
      userId: user.id,
      projectId: project.id,
      url: project.url,
      devices: ['desktop'],
      locations: ['london'],
      updateType: 'manual',
      runs: 1,
    });
    await first.close();
    // Back to what schema 8 wrote: the same tables without the revision columns.
    const db = new DatabaseSync(path);
    for (const table of ['updates', 'snapshots', 'kpis']) db.exec(`ALTER TABLE ${table} DROP COLUMN revision`);
    db.exec("UPDATE meta SET value = '8' WHERE key = 'schema'");
    db.close();

    const again = new SqliteStore({ path });
    await again.init();
    try {
      expect((await again.findSnapshot(project.id, old))!.revision).toBeUndefined();
      expect(await again.findUpdate(user.id, 'old-update')).not.toHaveProperty('revision');
      const revision = { commit: 'abcdef0', pullRequest: 4 };
      const now = new Date('2026-05-02T09:00:00Z');
      await again.saveSnapshot({
        project,
        updateId: 'new',
        date: now,
        updateType: 'ci',
        results: [storedResult('desktop', 'london')],
        revision,
      });
      expect((await again.findSnapshot(project.id, now))!.revision).toEqual(revision);
      const rows = await kpiRows(again, { userId: user.id, from: old, to: new Date(now.getTime() + 1_000) });
      expect(new Set(rows.map((r) => JSON.stringify(r.revision ?? null)))).toEqual(
        new Set(['null', JSON.stringify(revision)]),
      );
      expect(
        await kpiRows(again, { userId: user.id, from: old, to: new Date(now.getTime() + 1_000), pullRequest: 4 }),
      ).toHaveLength(rows.filter((r) => r.revision).length);
    } finally {
      await again.close();
    }
  });
});

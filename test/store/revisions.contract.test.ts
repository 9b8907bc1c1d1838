import { expect, it } from 'vitest';
import type { Revision } from '@perfwatch/common';
import type { Store } from '@perfwatch/gateway';
import { kpiRows } from '../support/kpi-rows.ts';
import { describeOnBothStores, storedResult } from './store-backends.ts';

// The code change an update measured (issue 32): kept on the update, its snapshot and the KPI
// records the overview reads and filters, and absent from records that had none.
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.

const FULL = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';

async function projectOf(store: Store, name: string) {
  const user = await store.createUser(name);
  const project = await store.addProject({
    userId: user.id,
    url: `https://${name}.example/`,
    domain: `${name}.example`,
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
  return { user, project };
}

describeOnBothStores('revisions', (store) => {
  it("keeps an update's revision, and reads one without it back without the member", async () => {
    const { user, project } = await projectOf(store(), 'rev-updates');
    const revision: Revision = { commit: FULL, branch: 'feature/faster-hero', pullRequest: 17 };
    const update = (id: string, given?: Revision) =>
      store().createUpdate({
        id,
        userId: user.id,
        projectId: project.id,
        url: project.url,
        devices: ['mobile'],
        locations: project.locations,
        updateType: 'ci',
        runs: 1,
        ...(given ? { revision: given } : {}),
      });
    await update('rev-with', revision);
    await update('rev-without');
    await update('rev-commit-only', { commit: FULL.slice(0, 7) });
    const admitted = await store().admitUpdates(user.id, 10);
    expect(admitted.find((u) => u.id === 'rev-with')!.revision).toEqual(revision);
    expect((await store().findUpdate(user.id, 'rev-with'))!.revision).toEqual(revision);
    expect((await store().findUpdate(user.id, 'rev-commit-only'))!.revision).toEqual({ commit: FULL.slice(0, 7) });
    const without = (await store().findUpdate(user.id, 'rev-without'))!;
    expect(without).not.toHaveProperty('revision');
    const unfinished = await store().listUnfinishedUpdates();
    expect(unfinished.find((u) => u.id === 'rev-with')!.revision).toEqual(revision);
    expect(unfinished.find((u) => u.id === 'rev-without')).not.toHaveProperty('revision');
  });

  it("keeps a snapshot's revision on the snapshot, its list entry and its KPI records; none reads back as none", async () => {
    const { user, project } = await projectOf(store(), 'rev-snapshots');
    const revision: Revision = { commit: FULL, branch: 'main', pullRequest: 42 };
    const withDate = new Date('2026-07-01T10:00:00Z');
    const withoutDate = new Date('2026-07-01T11:00:00Z');
    await store().saveSnapshot({
      project,
      updateId: 'rev-snap-with',
      date: withDate,
      updateType: 'ci',
      results: [storedResult('mobile', 'london')],
      revision,
    });
    await store().saveSnapshot({
      project,
      updateId: 'rev-snap-without',
      date: withoutDate,
      updateType: 'manual',
      results: [storedResult('mobile', 'london')],
    });
    expect((await store().findSnapshot(project.id, withDate))!.revision).toEqual(revision);
    expect((await store().findSnapshotCells(project.id, withDate))!.revision).toEqual(revision);
    expect((await store().findSnapshot(project.id, withoutDate))!.revision).toBeUndefined();
    expect((await store().findSnapshotCells(project.id, withoutDate))!.revision).toBeUndefined();
    const listed = await store().listSnapshots(project.id, { limit: 10 });
    expect(listed.map((s) => s.revision)).toEqual([revision, undefined]);

    const rows = await kpiRows(store(), { userId: user.id, from: withDate, to: new Date(withoutDate.getTime() + 1) });
    const of = (date: Date) => rows.filter((r) => r.date.getTime() === date.getTime());
    expect(of(withDate).length).toBeGreaterThan(0);
    expect(of(withDate).every((r) => JSON.stringify(r.revision) === JSON.stringify(revision))).toBe(true);
    expect(of(withoutDate).length).toBeGreaterThan(0);
    expect(of(withoutDate).every((r) => r.revision === undefined)).toBe(true);
  });

  it('filters KPI records by commit (an abbreviation finds the full hash), branch and pull request', async () => {
    const { user, project } = await projectOf(store(), 'rev-filters');
    const day = (h: number) => new Date(Date.UTC(2026, 7, 3, h));
    const save = (updateId: string, h: number, revision?: Revision) =>
      store().saveSnapshot({
        project,
        updateId,
        date: day(h),
        updateType: 'ci',
        results: [storedResult('desktop', 'london')],
        ...(revision ? { revision } : {}),
      });
    await save('rev-f1', 1, { commit: FULL, branch: 'main' });
    await save('rev-f2', 2, { commit: 'a1b2c3e000000000000000000000000000000000', branch: 'topic', pullRequest: 7 });
    await save('rev-f3', 3, { branch: 'topic', pullRequest: 8 });
    await save('rev-f4', 4);
    const hours = async (filter: { commit?: string; branch?: string; pullRequest?: number }) => {
      const rows = await kpiRows(store(), { userId: user.id, from: day(0), to: day(5), ...filter });
      return [...new Set(rows.map((r) => r.date.getUTCHours()))];
    };
    expect(await hours({})).toEqual([1, 2, 3, 4]);
    expect(await hours({ commit: FULL })).toEqual([1]);
    expect(await hours({ commit: FULL.slice(0, 7) })).toEqual([1]);
    expect(await hours({ commit: 'a1b2c3' })).toEqual([1, 2]);
    expect(await hours({ commit: 'b1b2c3d' })).toEqual([]);
    expect(await hours({ branch: 'topic' })).toEqual([2, 3]);
    expect(await hours({ pullRequest: 8 })).toEqual([3]);
    expect(await hours({ branch: 'topic', pullRequest: 7, commit: 'a1b2c3e' })).toEqual([2]);
  });

  it('keeps the revision on KPI records computed again', async () => {
    const { user, project } = await projectOf(store(), 'rev-recompute');
    const date = new Date('2026-08-09T09:00:00Z');
    const revision: Revision = { pullRequest: 99 };
    await store().saveSnapshot({
      project,
      updateId: 'rev-recompute-1',
      date,
      updateType: 'ci',
      results: [storedResult('mobile', 'london')],
      revision,
    });
    await store().replaceSnapshotKpis(
      { projectId: project.id, date },
      {
        sections: ['LIGHTHOUSE'],
        results: [
          {
            device: 'mobile',
            location: 'london',
            kpis: [{ section: 'LIGHTHOUSE', kpi: 'performance', data: { score: 50 } }],
          },
        ],
        version: 2,
      },
    );
    const rows = await kpiRows(store(), { userId: user.id, from: date, to: new Date(date.getTime() + 1_000) });
    const performance = rows.find((r) => r.kpi === 'performance')!;
    expect(performance.data).toEqual({ score: 50 });
    expect(performance.revision).toEqual(revision);
    expect(
      await kpiRows(store(), { userId: user.id, from: date, to: new Date(date.getTime() + 1_000), pullRequest: 99 }),
    ).toHaveLength(rows.length);
  });
});

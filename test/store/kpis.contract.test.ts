import { expect, it } from 'vitest';
import { lighthouseKpis } from '@perfwatch/common';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { kpiRows } from '../support/kpi-rows.ts';
import { describeOnBothStores, storedResult } from './store-backends.ts';

// The overview's KPI records, their versions, and field-data history (KpisStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('kpis', (store) => {
  it("streams a user's KPI records in date, url, device, location, section, kpi order, filtered", async () => {
    const user = await store().createUser('frank');
    const other = await store().createUser('grace');
    const a = await store().addProject({
      userId: user.id,
      url: 'https://b.example/',
      domain: 'b.example',
      locations: ['london', 'tokyo'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const b = await store().addProject({
      userId: user.id,
      url: 'https://a.example/',
      domain: 'a.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const theirs = await store().addProject({
      userId: other.id,
      url: 'https://a.example/',
      domain: 'a.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const day = (d: number, h = 12) => new Date(Date.UTC(2026, 5, d, h));
    await store().saveSnapshot({
      project: a,
      updateId: '1',
      date: day(2),
      updateType: 'manual',
      results: [storedResult('mobile', 'tokyo'), storedResult('desktop', 'london')],
    });
    await store().saveSnapshot({
      project: b,
      updateId: '2',
      date: day(2),
      updateType: 'ci',
      results: [storedResult('mobile', 'london')],
    });
    await store().saveSnapshot({
      project: b,
      updateId: '3',
      date: day(1),
      updateType: 'scheduled',
      results: [storedResult('mobile', 'london')],
    });
    await store().saveSnapshot({
      project: b,
      updateId: '4',
      date: day(5),
      updateType: 'manual',
      results: [storedResult('mobile', 'london')],
    });
    await store().saveSnapshot({
      project: theirs,
      updateId: '5',
      date: day(2),
      updateType: 'manual',
      results: [storedResult('mobile', 'london')],
    });

    const rows = [];
    for (const row of await kpiRows(store(), { userId: user.id, from: day(1, 0), to: day(3, 0) })) rows.push(row);
    const perCell = lighthouseKpis(loadLhr('mobile', 1)).length;
    expect(rows).toHaveLength(4 * perCell);
    const keys = rows.map((r) => [r.date.toISOString(), r.url, r.device, r.location, r.section, r.kpi].join('|'));
    expect(keys).toEqual([...keys].sort());
    expect(rows[0]!.updateType).toBe('scheduled');
    expect(rows.every((r) => r.domain !== undefined && r.date < day(3, 0))).toBe(true);

    const ci = [];
    for (const row of await kpiRows(store(), {
      userId: user.id,
      from: day(1, 0),
      to: day(6, 0),
      domain: 'a.example',
      updateType: 'ci',
      sections: ['LIGHTHOUSE'],
    }))
      ci.push(row);
    expect(ci).toHaveLength(perCell);
    const none = [];
    for (const row of await kpiRows(store(), { userId: user.id, from: day(1, 0), to: day(6, 0), sections: ['CRUX'] }))
      none.push(row);
    expect(none).toHaveLength(0);

    expect((await store().listSnapshots(b.id)).map((s) => s.date.getUTCDate())).toEqual([1, 2, 5]);
    expect(await store().removeProject(user.id, b.url)).toBe(true);
    expect(await store().listSnapshots(b.id)).toEqual([]);
    const left = [];
    for (const row of await kpiRows(store(), { userId: user.id, from: day(1, 0), to: day(6, 0) })) left.push(row);
    expect(new Set(left.map((r) => r.url))).toEqual(new Set(['https://b.example/']));
    // The other user's project with the same URL is untouched.
    expect(await store().listSnapshots(theirs.id)).toHaveLength(1);
  });

  it('finds snapshots whose KPI records are of an older version and replaces their records section by section', async () => {
    const user = await store().createUser('kpi-versions');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://kpis.example/',
      domain: 'kpis.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const old = new Date('2026-04-01T10:00:00Z');
    const current = new Date('2026-04-01T11:00:00Z');
    const legacy = [
      { section: 'LIGHTHOUSE' as const, kpi: 'performance', data: { score: 50 } },
      { section: 'SECURITY' as const, kpi: 'headers', data: { hsts: true } },
    ];
    await store().saveSnapshot({
      project,
      updateId: 'kpi-old',
      date: old,
      updateType: 'manual',
      results: [{ ...storedResult('mobile', 'london'), kpis: legacy }],
    });
    await store().saveSnapshot({
      project,
      updateId: 'kpi-new',
      date: current,
      updateType: 'manual',
      results: [storedResult('mobile', 'london')],
      kpiVersion: 2,
    });
    const mine = async () =>
      (await store().listSnapshotsBelowKpiVersion(2, 1_000)).filter((s) => s.projectId === project.id);
    expect(await mine()).toEqual([{ projectId: project.id, date: old }]);

    const replacement = {
      sections: ['LIGHTHOUSE'],
      results: [
        {
          device: 'mobile',
          location: 'london',
          kpis: [{ section: 'LIGHTHOUSE', kpi: 'performance', data: { score: 50, lcp: 2100 } }],
        },
      ],
      version: 2,
    } as const;
    await store().replaceSnapshotKpis({ projectId: project.id, date: old }, replacement);
    // And again: a replacement repeated leaves the same records.
    await store().replaceSnapshotKpis({ projectId: project.id, date: old }, replacement);
    expect(await mine()).toEqual([]);
    const rows = [];
    for (const row of await kpiRows(store(), { userId: user.id, from: old, to: new Date(old.getTime() + 1_000) }))
      rows.push([row.section, row.kpi, row.data, row.updateType, row.url]);
    expect(rows).toEqual([
      ['LIGHTHOUSE', 'performance', { score: 50, lcp: 2100 }, 'manual', project.url],
      ['SECURITY', 'headers', { hsts: true }, 'manual', project.url],
    ]);
  });

  it("keeps a project's field-data history beside its snapshots: replaced whole, kept by the orphan sweep, removed with the project", async () => {
    const user = await store().createUser('field-history');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://history.example/',
      domain: 'history.example',
      locations: ['tokyo'],
      defaultLocation: 'tokyo',
      runs: 1,
      schedule: null,
    });
    const week = (day: number, lcp: string) => ({
      date: new Date(Date.UTC(2026, 9, day)),
      device: 'mobile' as const,
      kpis: [{ section: 'CRUX' as const, kpi: 'url_lcp_p75', data: lcp }],
    });
    await store().saveFieldHistory(project, [week(4, '2900'), week(11, '2800')]);
    await store().saveFieldHistory(project, [week(4, '2700'), week(11, '2600'), week(18, '2500')]);
    const read = async () => {
      const rows: Array<[string, string, unknown, string]> = [];
      for (const r of await kpiRows(store(), {
        userId: user.id,
        from: new Date(Date.UTC(2026, 0, 1)),
        to: new Date(Date.UTC(2027, 0, 1)),
      }))
        rows.push([r.date.toISOString().slice(0, 10), r.kpi, r.data, r.location]);
      return rows;
    };
    expect(await read()).toEqual([
      ['2026-10-04', 'url_lcp_p75', '2700', 'tokyo'],
      ['2026-10-11', 'url_lcp_p75', '2600', 'tokyo'],
      ['2026-10-18', 'url_lcp_p75', '2500', 'tokyo'],
    ]);
    // No snapshot owns them, and the sweep of records of unfinished snapshots leaves them be.
    await store().deleteOrphans(new Date(Date.now() + 3_600_000));
    expect(await read()).toHaveLength(3);
    await store().removeProject(user.id, project.url);
    expect(await read()).toEqual([]);
  });
});

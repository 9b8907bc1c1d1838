import { expect, it } from 'vitest';
import type { AuditRunResult } from '@perfwatch/common';
import { receivedRun, type NewLocationSnapshot } from '@perfwatch/gateway';
import { buildLocationSnapshot } from '../../gateway/src/updates/snapshot-builder.ts';
import { storedStep } from '../../gateway/src/snapshots/store/snapshots-store.ts';
import { loadFlowSteps } from '../support/lhr-fixtures.ts';
import { kpiRows } from '../support/kpi-rows.ts';
import { CALM_CONDITIONS } from '../support/new-cells.ts';
import { describeOnBothStores, storedResult } from './store-backends.ts';

// A flow's cell (issue 36) written and read back: its steps' summaries in the cell's record, each
// step's result beside it, its steps' KPI records named by step in the flow's order, all removed
// with the snapshot. Run against both backends: FerretDB (MongoDB where containers run) and SQLite.

const FLOW = ['product', 'add to cart', 'cart'];
const INP = 'interaction-to-next-paint';

/** The fixture flow's cell from three runs whose "Add to cart" took 100, 300 and 200 ms to paint. */
async function flowCell(): Promise<NewLocationSnapshot> {
  const runs = [100, 300, 200].map((inp, runIndex) => {
    const steps = loadFlowSteps();
    steps[1]!.lhr.audits[INP]!.numericValue = inp;
    const run: AuditRunResult = {
      jobId: `flow-${runIndex}`,
      agentId: 'a',
      location: 'london',
      device: 'desktop',
      runIndex,
      startedAt: '2026-01-02T03:04:05.000Z',
      lighthouseMs: 1,
      lhr: steps[0]!.lhr,
      steps,
      conditions: CALM_CONDITIONS,
    };
    return receivedRun(run);
  });
  return buildLocationSnapshot('desktop', 'london', runs);
}

describeOnBothStores('flow snapshots', (store) => {
  const project = async (name: string) => {
    const user = await store().createUser(name);
    const added = await store().addProject({
      userId: user.id,
      url: `https://${name}.example/cart`,
      domain: `${name}.example`,
      locations: ['london'],
      defaultLocation: 'london',
      runs: 3,
      schedule: null,
    });
    return Object.assign(added, { userId: user.id });
  };

  it("keeps a flow cell's steps, each step's result read by its place, the first being the cell's", async () => {
    const shop = await project('flora');
    const cell = await flowCell();
    const date = new Date('2026-05-01T12:00:00Z');
    await store().saveSnapshot({
      project: shop,
      updateId: 'flora-1',
      date,
      updateType: 'manual',
      results: [cell, storedResult('mobile', 'london')],
    });

    const whole = (await store().findSnapshot(shop.id, date))!;
    expect(whole.results.map((r) => r.steps)).toEqual([cell.steps!.map(storedStep), undefined]);
    expect(whole.results[0]!.steps![1]!.runs.map((run) => run.inp)).toEqual([100, 300, 200]);

    const cells = (await store().findSnapshotCells(shop.id, date))!;
    const [flow, page] = cells.results as [(typeof cells.results)[0], (typeof cells.results)[0]];
    expect(flow.steps!.map((s) => `${s.kind} ${s.name} ${s.median}`)).toEqual([
      `navigate product ${cell.median}`,
      'timespan add to cart 3',
      `snapshot cart ${cell.steps![2]!.median}`,
    ]);
    const stepResult = async (index: number) => JSON.parse((await flow.stepJson(index)).toString('utf8'));
    expect((await flow.stepJson(0)).equals(await flow.resultJson())).toBe(true);
    expect((await stepResult(1)).gatherMode).toBe('timespan');
    // The timespan's median run's result: the run of median INP.
    expect((await stepResult(1)).audits[INP].numericValue).toBe(200);
    expect(await stepResult(2)).toEqual(loadFlowSteps()[2]!.lhr);
    await expect(flow.stepJson(3)).rejects.toThrow(/no step 4/);
    expect(page.steps).toBeUndefined();
    await expect(page.stepJson(1)).rejects.toThrow(/no step 2/);
  });

  it("names each of a flow's KPI records by its step, in the flow's order; a page's records have none", async () => {
    const shop = await project('fern');
    const cell = await flowCell();
    const date = new Date('2026-05-02T12:00:00Z');
    await store().saveSnapshot({
      project: shop,
      updateId: 'fern-1',
      date,
      updateType: 'manual',
      results: [cell, storedResult('mobile', 'london')],
    });
    const user = shop.userId;
    const rows = await kpiRows(store(), { userId: user, from: date, to: new Date(date.getTime() + 1000) });

    const ofFlow = rows.filter((r) => r.device === 'desktop');
    const expected = cell.kpis.length + cell.steps!.slice(1).reduce((n, s) => n + s.kpis.length, 0);
    expect(ofFlow).toHaveLength(expected);
    expect(new Set(ofFlow.map((r) => r.step))).toEqual(new Set(FLOW));
    // Each KPI's records of the flow in the flow's order (the overview draws a step after another).
    const byKpi = new Map<string, number[]>();
    for (const r of ofFlow)
      byKpi.set(`${r.section}:${r.kpi}`, [...(byKpi.get(`${r.section}:${r.kpi}`) ?? []), FLOW.indexOf(r.step!)]);
    expect(byKpi.get('LIGHTHOUSE:performance')).toEqual([0, 1, 2]);
    for (const places of byKpi.values()) expect(places).toEqual([...places].sort((a, b) => a - b));
    const keys = ofFlow.map((r) => `${r.section}|${r.kpi}`);
    expect(keys).toEqual([...keys].sort());

    const ofPage = rows.filter((r) => r.device === 'mobile');
    expect(ofPage.length).toBeGreaterThan(0);
    expect(ofPage.every((r) => !('step' in r) || r.step === undefined)).toBe(true);
  });

  it("removes a flow snapshot's step results and step records with it", async () => {
    const shop = await project('fennel');
    // Before every other case's dates: retention deletes across projects.
    const date = new Date('2024-06-01T12:00:00Z');
    await store().saveSnapshot({
      project: shop,
      updateId: 'fennel-1',
      date,
      updateType: 'manual',
      results: [await flowCell()],
    });
    const cells = (await store().findSnapshotCells(shop.id, date))!;
    const flow = cells.results[0]!;
    expect((await flow.stepJson(2)).byteLength).toBeGreaterThan(0);

    expect(await store().deleteSnapshotsBefore(new Date('2024-06-02T00:00:00Z'), 10)).toBe(1);
    expect(await store().findSnapshot(shop.id, date)).toBeNull();
    await expect(flow.stepJson(1)).rejects.toThrow();
    await expect(flow.stepJson(2)).rejects.toThrow();
    const user = shop.userId;
    expect(await kpiRows(store(), { userId: user, from: date, to: new Date(date.getTime() + 1000) })).toEqual([]);
  });
});

import { expect, it } from 'vitest';
import {
  digestKpis,
  digestRun,
  digestSkeleton,
  lighthouseKpis,
  pageSourceKpis,
  savingsKpis,
  stepRunSummary,
} from '@perfwatch/common';
import { ResultBytes, type Store } from '@perfwatch/gateway';
import { recomputeKpis } from '../../gateway/src/admin/recompute-kpis.ts';
import { loadFlowSteps } from '../support/lhr-fixtures.ts';
import { kpiRows } from '../support/kpi-rows.ts';
import { newCell } from '../support/new-cells.ts';
import { describeOnBothStores } from './store-backends.ts';

// `perfwatch admin recompute-kpis` over a flow's snapshot (issue 36): every step's records are
// taken again from its own stored result and keep their step's name, on both backends.

async function flowSnapshot(store: Store, name: string, date: Date) {
  const user = await store.createUser(name);
  const project = await store.addProject({
    userId: user.id,
    url: `https://${name}.example/cart.html`,
    domain: `${name}.example`,
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
  const steps = loadFlowSteps().map(({ name: stepName, kind, lhr }) => ({
    name: stepName,
    kind,
    median: 1,
    runs: [stepRunSummary(lhr)],
    lighthouse: ResultBytes.fromResult(lhr),
    measured: digestSkeleton(digestRun(lhr)),
    kpis: digestKpis(digestRun(lhr))!,
  }));
  const first = loadFlowSteps()[0]!.lhr;
  const cell = {
    ...newCell({
      device: 'desktop',
      location: 'london',
      median: 1,
      runs: [],
      lighthouse: first,
      crux: { url: null },
      elementCount: 80,
      // Only the performance record, as a snapshot of an older KPI version might have.
      kpis: lighthouseKpis(first).slice(0, 1),
    }),
    steps,
  };
  // Stored at KPI version 1: what recompute-kpis looks for.
  await store.saveSnapshot({
    project,
    updateId: `${name}-1`,
    date,
    updateType: 'manual',
    results: [cell],
    kpiVersion: 1,
  });
  return { user, project };
}

describeOnBothStores('flow KPI records', (store) => {
  it("takes every step's records again from its stored result, under the step's name", async () => {
    const date = new Date('2026-11-20T10:00:00Z');
    const { user } = await flowSnapshot(store(), 'flow-recompute', date);
    expect(await recomputeKpis(store())).toBeGreaterThanOrEqual(1);
    const rows = await kpiRows(store(), { userId: user.id, from: date, to: new Date(date.getTime() + 1_000) });
    const performance = rows.filter((r) => r.kpi === 'performance');
    expect(performance.map((r) => r.step)).toEqual(['product', 'add to cart', 'cart']);
    const timespan = loadFlowSteps()[1]!.lhr;
    expect((performance[1]!.data as { inp: number }).inp).toBe(
      Math.round(timespan.audits['interaction-to-next-paint']!.numericValue! * 10) / 10,
    );
    // Every record of the snapshot names its step; the page's own are the first step's.
    expect(rows.every((r) => r.step !== undefined)).toBe(true);
    const expected = loadFlowSteps().reduce(
      (n, { lhr }) => n + [...lighthouseKpis(lhr), ...pageSourceKpis(lhr), ...savingsKpis(lhr)].length,
      0,
    );
    expect(rows).toHaveLength(expected);
  });
});

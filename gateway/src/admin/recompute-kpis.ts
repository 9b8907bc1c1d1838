import {
  LIGHTHOUSE_KPI_VERSION,
  lighthouseKpis,
  lighthouseResultSchema,
  pageSourceKpis,
  savingsKpis,
  type KpiRecord,
} from '@perfwatch/common';
import type { KpisStore } from '../snapshots/store/kpis-store.ts';
import type { SnapshotReadsStore, StoredCell } from '../snapshots/store/snapshots-store.ts';

/** The sections whose records come from the stored Lighthouse result alone, and can be rebuilt from it. */
const RECOMPUTED_SECTIONS = ['LIGHTHOUSE', 'PAGE_SOURCE', 'SAVINGS'] as const;

/**
 * Rebuilds the KPI records of every snapshot stored with an older LIGHTHOUSE_KPI_VERSION from its
 * kept results (the median run's Lighthouse result per device and location), a batch at a time.
 * SECURITY (the agent's probe of the live page) and CRUX (field data of that day) cannot be
 * measured again afterwards and stay as they were.
 */
export async function recomputeKpis(
  store: Pick<KpisStore, 'listSnapshotsBelowKpiVersion' | 'replaceSnapshotKpis'> &
    Pick<SnapshotReadsStore, 'findSnapshotCells'>,
  { batch = 50, onSnapshot }: { batch?: number; onSnapshot?: (done: number) => void } = {},
): Promise<number> {
  let done = 0;
  for (;;) {
    const stale = await store.listSnapshotsBelowKpiVersion(LIGHTHOUSE_KPI_VERSION, batch);
    if (stale.length === 0) return done;
    for (const { projectId, date } of stale) {
      const snapshot = await store.findSnapshotCells(projectId, date);
      // One cell's results at a time: a flow's cell has one per step.
      const results = [];
      for (const cell of snapshot?.results ?? []) results.push(await recomputedCell(cell));
      await store.replaceSnapshotKpis(
        { projectId, date },
        { sections: RECOMPUTED_SECTIONS, results, version: LIGHTHOUSE_KPI_VERSION },
      );
      done += 1;
      onSnapshot?.(done);
    }
  }
}

/** A cell's records from its stored results: its own, and each further step's of a flow, under the step's name. */
async function recomputedCell(cell: StoredCell) {
  const { device, location, steps } = cell;
  const kpis = resultKpis(await cell.resultJson());
  if (!steps) return { device, location, kpis };
  const further = [];
  for (const [index, step] of steps.entries())
    if (index > 0) further.push({ name: step.name, kpis: resultKpis(await cell.stepJson(index)) });
  return { device, location, kpis, steps: [{ name: steps[0]!.name }, ...further] };
}

function resultKpis(json: Buffer): KpiRecord[] {
  const lhr = lighthouseResultSchema.parse(JSON.parse(json.toString('utf8')));
  return [...lighthouseKpis(lhr), ...pageSourceKpis(lhr), ...savingsKpis(lhr)];
}

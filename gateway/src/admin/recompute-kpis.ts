import { LIGHTHOUSE_KPI_VERSION, lighthouseKpis, pageSourceKpis, savingsKpis } from '@perfwatch/common';
import type { KpisStore } from '../snapshots/store/kpis-store.ts';
import type { SnapshotReadsStore } from '../snapshots/store/snapshots-store.ts';

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
    Pick<SnapshotReadsStore, 'findSnapshot'>,
  { batch = 50, onSnapshot }: { batch?: number; onSnapshot?: (done: number) => void } = {},
): Promise<number> {
  let done = 0;
  for (;;) {
    const stale = await store.listSnapshotsBelowKpiVersion(LIGHTHOUSE_KPI_VERSION, batch);
    if (stale.length === 0) return done;
    for (const { projectId, date } of stale) {
      const snapshot = await store.findSnapshot(projectId, date);
      const results = (snapshot?.results ?? []).map((r) => ({
        device: r.device,
        location: r.location,
        kpis: [...lighthouseKpis(r.lighthouse), ...pageSourceKpis(r.lighthouse), ...savingsKpis(r.lighthouse)],
      }));
      await store.replaceSnapshotKpis(
        { projectId, date },
        { sections: RECOMPUTED_SECTIONS, results, version: LIGHTHOUSE_KPI_VERSION },
      );
      done += 1;
      onSnapshot?.(done);
    }
  }
}

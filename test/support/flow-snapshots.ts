import type { AuditRunResult, Location } from '@perfwatch/common';
import { receivedRun, type ProjectRecord, type Store } from '@perfwatch/gateway';
import { buildLocationSnapshot } from '../../gateway/src/updates/snapshot-builder.ts';
import { loadFlowSteps } from './lhr-fixtures.ts';
import { CALM_CONDITIONS } from './new-cells.ts';

/**
 * A snapshot of a flow project as an update would store it, without an agent: the real flow
 * fixture (product, add to cart, cart on desktop) as one run's reply, built into its cell by the
 * gateway's own snapshot builder (per-step medians, step KPI records) and saved by the store.
 */
export async function seedFlowSnapshot(
  store: Store,
  project: ProjectRecord,
  { updateId, date, location = 'london' }: { updateId: string; date: Date; location?: Location },
): Promise<void> {
  const steps = loadFlowSteps();
  const run: AuditRunResult = {
    jobId: `${updateId}-job`,
    agentId: 'seeded',
    location,
    device: 'desktop',
    runIndex: 0,
    startedAt: date.toISOString(),
    lighthouseMs: 20_000,
    lhr: steps[0]!.lhr,
    steps,
    conditions: CALM_CONDITIONS,
  };
  const cell = await buildLocationSnapshot('desktop', location, [receivedRun(run)]);
  await store.saveSnapshot({ project, updateId, date, updateType: 'manual', results: [cell] });
}

import type { AuditRunResult, Device, LighthouseResult, Location, RunConditions } from '@perfwatch/common';
import { receivedRun, ResultBytes, type LocationSnapshot, type NewLocationSnapshot } from '@perfwatch/gateway';
import { buildLocationSnapshot } from '../../gateway/src/updates/snapshot-builder.ts';
import { storedStep } from '../../gateway/src/snapshots/store/snapshots-store.ts';

/** A run's conditions as a calm agent reports them: alone, as fast as its baseline. */
export const CALM_CONDITIONS: RunConditions = {
  benchmarkIndex: 2400,
  baselineBenchmarkIndex: 2460,
  cpuMultiplier: 8,
  concurrentRuns: 0,
  loadAverage: 0.2,
  chromeVersion: '142',
  lighthouseVersion: '13',
};

/** A cell to write, from one given with its result whole, as the update service hands it over. */
export function newCell(
  cell: Omit<LocationSnapshot, 'lighthouse' | 'steps'> & { lighthouse: LighthouseResult },
): NewLocationSnapshot {
  return {
    ...cell,
    lighthouse: ResultBytes.fromResult(cell.lighthouse),
    lighthouseVersion: cell.lighthouse.lighthouseVersion,
    measured: cell.lighthouse,
  };
}

/** A cell just built, as a read gives it back: its result whole. */
export async function readCell(cell: NewLocationSnapshot): Promise<LocationSnapshot> {
  const { lighthouseVersion: _version, measured: _measured, steps, ...rest } = cell;
  return { ...rest, lighthouse: cell.lighthouse.read(), ...(steps ? { steps: steps.map(storedStep) } : {}) };
}

/**
 * A cell built by the update service from whole runs (as agents before v1.5 send them), read
 * back as a store gives it: for tests of what is shown of cells.
 */
export async function builtCell(
  device: Device,
  location: Location,
  runs: ReadonlyArray<AuditRunResult & { retestOfRunIndex?: number }>,
): Promise<LocationSnapshot> {
  return readCell(
    await buildLocationSnapshot(
      device,
      location,
      runs.map(({ retestOfRunIndex, ...run }) => ({
        ...receivedRun(run),
        ...(retestOfRunIndex === undefined ? {} : { retestOfRunIndex }),
      })),
    ),
  );
}

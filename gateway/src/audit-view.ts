import { formatApiDateTime, type AuditResult, type Device, type Location, type LocationResult } from '@perfwatch/common';
import type { ProjectRecord, SnapshotFilter, SnapshotRecord } from './store/store.ts';

function verification(runs: SnapshotRecord['results'][number]['runs'], median: number): Pick<LocationResult, 'verification'> {
  if (!runs.some((run) => run.verdict)) return {};
  const suspectRuns = runs.filter((run) => run.verdict === 'suspect').length;
  return {
    verification: {
      reliableRuns: runs.length - suspectRuns,
      suspectRuns,
      retests: runs.filter((run) => run.retestOf !== undefined).length,
      median: runs[median - 1]?.verdict ?? 'reliable',
    },
  };
}

/** The spec's audit result for a stored snapshot: device → location → result. */
export function toAuditResult(snapshot: Pick<SnapshotRecord, 'date' | 'available' | 'results'> & { missing?: SnapshotRecord['missing'] }, project: Pick<ProjectRecord, 'defaultLocation'>, filter: SnapshotFilter = {}): AuditResult {
  const date = formatApiDateTime(snapshot.date);
  const out: Partial<Record<Device, Partial<Record<Location, LocationResult>>>> = {};
  for (const r of snapshot.results) {
    const locations = snapshot.available.filter((a) => a.device === r.device).map((a) => a.location);
    (out[r.device] ??= {})[r.location] = {
      lighthouse: { ...r.lighthouse, crux: r.crux, date, elementCount: r.elementCount },
      median: r.median,
      locations,
      defaultLocation: project.defaultLocation,
      runs: r.runs,
      ...verification(r.runs, r.median),
      ...(r.checks ? { checks: r.checks } : {}),
    };
  }
  // Only the cells the request asked about; absent when none is missing, so a complete result
  // keeps the seed's shape exactly.
  const missing = (snapshot.missing ?? []).filter((m) => (!filter.device || m.device === filter.device) && (!filter.locations?.length || filter.locations.includes(m.location)));
  return missing.length > 0 ? { ...out, missing } : out;
}

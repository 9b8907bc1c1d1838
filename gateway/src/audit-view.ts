import { formatApiDateTime, type AuditResult, type Device, type Location, type LocationResult } from '@perfwatch/common';
import type { ProjectRecord, SnapshotFilter, SnapshotRecord } from './store/store.ts';

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
    };
  }
  // Only the cells the request asked about; absent when none is missing, so a complete result
  // keeps the seed's shape exactly.
  const missing = (snapshot.missing ?? []).filter((m) => (!filter.device || m.device === filter.device) && (!filter.locations?.length || filter.locations.includes(m.location)));
  return missing.length > 0 ? { ...out, missing } : out;
}

import { formatApiDateTime, type AuditResult, type Device, type Location, type LocationResult } from '@perfwatch/common';
import type { ProjectRecord, SnapshotRecord } from './store/store.ts';

/** The spec's audit result for a stored snapshot: device → location → result. */
export function toAuditResult(snapshot: Pick<SnapshotRecord, 'date' | 'available' | 'results'>, project: Pick<ProjectRecord, 'defaultLocation'>): AuditResult {
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
  return out;
}

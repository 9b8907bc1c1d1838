import {
  formatApiDateTime,
  type CellArtifacts,
  type Device,
  type Location,
  type RequestsComparison,
} from '@perfwatch/common';
import { artifactExpiry, artifactsExpired, type ArtifactClock } from './artifact-states.ts';
import { readRequestLines, type RequestSide } from './request-lines.ts';
import { diffRequests } from './requests-diff.ts';
import type { ArtifactStore } from './store/artifact-store.ts';

/** Where a comparison reads requests artifacts: the store, and the retention they are judged by. */
export interface ComparedArtifacts {
  store: Pick<ArtifactStore, 'get'>;
  clock: ArtifactClock;
}

/** One side's cell: its project (owner organisation), its snapshot (update id, date) and the cell's artifact states. */
export interface RequestsSide {
  project: { id: string; userId: string };
  snapshot: { updateId: string; date: Date };
  cell: { device: Device; location: Location; artifacts?: CellArtifacts };
}

/** Why a side's requests cannot be read, judged from its snapshot's record before the store is asked; null: ask it. */
function refusal(side: RequestsSide, clock: ArtifactClock): string | null {
  const state = side.cell.artifacts?.requests;
  if (!state) return 'its requests were never kept (measured before artifacts were kept, or by a gateway keeping none)';
  if (state.state === 'missing') return `its requests were not kept: ${state.reason}`;
  if (artifactsExpired(side.snapshot.date, clock))
    return `its requests expired on ${formatApiDateTime(artifactExpiry(side.snapshot.date, clock.retentionDays))} (kept ${clock.retentionDays} days: ARTIFACT_RETENTION_DAYS)`;
  return null;
}

async function readSide(artifacts: ComparedArtifacts, side: RequestsSide): Promise<RequestSide | { reason: string }> {
  const refused = refusal(side, artifacts.clock);
  if (refused) return { reason: refused };
  const key = {
    orgId: side.project.userId,
    projectId: side.project.id,
    snapshotId: side.snapshot.updateId,
    device: side.cell.device,
    location: side.cell.location,
    kind: 'requests' as const,
  };
  let stored;
  try {
    stored = await artifacts.store.get(key);
  } catch {
    return { reason: 'the artifact store is not answering' };
  }
  if (!stored) return { reason: 'its requests were stored, and are no longer in the artifact store' };
  try {
    return await readRequestLines(stored);
  } catch {
    return {
      reason: 'its requests artifact could not be read (the artifact store broke off, or its bytes are not gzip)',
    };
  }
}

/**
 * Two cells' requests compared (requests-diff.ts), or why not: each side's artifact read in
 * turn, streamed and bounded (request-lines.ts), so a comparison holds at most two sides' parsed
 * requests. A side that cannot be read makes the requests `unavailable`, never the comparison.
 */
export async function compareRequests(
  artifacts: ComparedArtifacts,
  from: RequestsSide,
  to: RequestsSide,
): Promise<RequestsComparison> {
  const before = await readSide(artifacts, from);
  if ('reason' in before) return { state: 'unavailable', reason: `from: ${before.reason}` };
  const after = await readSide(artifacts, to);
  if ('reason' in after) return { state: 'unavailable', reason: `to: ${after.reason}` };
  return { state: 'compared', ...diffRequests(before, after) };
}

import { ARTIFACT_KINDS, formatApiDateTime, type ArtifactKind, type CellArtifacts } from '@perfwatch/common';

/**
 * An artifact as a snapshot reports it: kept (until when), missing and why, or expired — kept
 * once, and past ARTIFACT_RETENTION_DAYS since, so the scheduler's retention pass has removed it
 * or is about to (docs/artifacts.md). Expiry is read from the snapshot's date, not asked of the
 * artifact store: a snapshot's read never waits on it.
 */
export type ReportedArtifact =
  | { state: 'stored'; bytes: number; truncated?: boolean; expires: string }
  | { state: 'missing'; reason: string }
  | { state: 'expired'; expired: string };

/** What expiry is judged against: the retention in force and the time now. */
export interface ArtifactClock {
  retentionDays: number;
  now: () => Date;
}

const DAY_MS = 86_400_000;

/** When an artifact of a snapshot taken at `date` passes its retention. */
export const artifactExpiry = (date: Date, retentionDays: number): Date =>
  new Date(date.getTime() + retentionDays * DAY_MS);

/** Whether a snapshot's artifacts, kept or not, are past their retention now. */
export const artifactsExpired = (date: Date, { retentionDays, now }: ArtifactClock): boolean =>
  artifactExpiry(date, retentionDays).getTime() <= now().getTime();

/** A cell's artifacts as its snapshot, taken at `date`, reports them now. */
export function reportedArtifacts(
  artifacts: CellArtifacts,
  date: Date,
  clock: ArtifactClock,
): Partial<Record<ArtifactKind, ReportedArtifact>> {
  const expiry = artifactExpiry(date, clock.retentionDays);
  const expired = artifactsExpired(date, clock);
  const out: Partial<Record<ArtifactKind, ReportedArtifact>> = {};
  for (const kind of ARTIFACT_KINDS) {
    const state = artifacts[kind];
    if (!state) continue;
    if (state.state === 'missing') out[kind] = state;
    else if (expired) out[kind] = { state: 'expired', expired: formatApiDateTime(expiry) };
    else out[kind] = { ...state, expires: formatApiDateTime(expiry) };
  }
  return out;
}

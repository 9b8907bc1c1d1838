import { ApiError, formatApiDateTime, type ArtifactKind, type CellArtifacts } from '@perfwatch/common';
import { artifactExpiry, artifactsExpired, type ArtifactClock } from './artifact-states.ts';

/**
 * Why a cell's artifact cannot be read, judged from what its snapshot recorded, before the
 * artifact store is asked: never kept (and why), or past its retention. Each is a 404 naming
 * the reason (the API's errors have no 410: "expired" is said in the message, as /v1/audit's
 * cells say it). null: it was stored and is within its retention, so the store is asked.
 */
export function artifactRefusal(
  kind: ArtifactKind,
  artifacts: CellArtifacts | undefined,
  snapshotDate: Date,
  clock: ArtifactClock,
): ApiError | null {
  const state = artifacts?.[kind];
  if (!state)
    return new ApiError('NOT_FOUND', 'The artifact was not kept.', [
      `kind: not kept: the ${kind} of this cell were never asked for (measured before artifacts were kept, or by a gateway keeping none)`,
    ]);
  if (state.state === 'missing')
    return new ApiError('NOT_FOUND', 'The artifact was not kept.', [`kind: not kept: ${state.reason}`]);
  if (artifactsExpired(snapshotDate, clock)) {
    const expired = formatApiDateTime(artifactExpiry(snapshotDate, clock.retentionDays));
    return new ApiError('NOT_FOUND', 'The artifact has expired.', [
      `kind: the ${kind} expired on ${expired} (kept ${clock.retentionDays} days: ARTIFACT_RETENTION_DAYS)`,
    ]);
  }
  return null;
}

/** Stored once, and gone from the store before its retention ended (removed by hand, a bucket emptied). */
export const artifactGone = (kind: ArtifactKind): ApiError =>
  new ApiError('NOT_FOUND', 'The artifact is no longer in the artifact store.', [
    `kind: the ${kind} were stored, and are no longer in the artifact store`,
  ]);

/** Seconds a caller is told to wait when the artifact store does not answer. */
const STORE_RETRY_AFTER_S = 30;

/** The artifact store did not answer (a server down, a disk unreadable): the caller may try again. */
export const artifactStoreDown = (cause: unknown): ApiError =>
  new ApiError(
    'SERVICE_UNAVAILABLE',
    'The artifact store is not answering; try again shortly.',
    ['the artifact store failed to read the artifact'],
    { cause, headers: { 'Retry-After': String(STORE_RETRY_AFTER_S) } },
  );

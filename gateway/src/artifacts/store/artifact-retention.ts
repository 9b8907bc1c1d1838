import type { Logger } from 'pino';
import type { ArtifactStore } from './artifact-store.ts';

export interface ArtifactRetention {
  store: Pick<ArtifactStore, 'removeOlderThan'>;
  /** ARTIFACT_RETENTION_DAYS: artifacts written longer ago are removed. */
  days: number;
}

/**
 * How long after its expiry an artifact is removed. A snapshot reports its artifacts expired
 * ARTIFACT_RETENTION_DAYS after its date (artifact-states.ts), while the store knows only when each
 * was written: before the snapshot's date, by as long as the rest of its update took — at most
 * UPDATE_DEADLINE_MS, a day. Removing a day later than the states expire means a snapshot never says
 * "stored" of an artifact already removed; the other way round (expired, not yet removed) a read
 * answers "expired" all the same.
 */
export const REMOVAL_GRACE_MS = 86_400_000;

/**
 * Removes artifacts past their retention (and REMOVAL_GRACE_MS), on the scheduler's retention pass. An artifact store
 * that is down is logged and tried again next pass: it never stops the records' own retention,
 * and a snapshot whose artifacts are gone reads them as missing.
 */
export async function removeExpiredArtifacts(
  { store, days }: ArtifactRetention,
  logger: Logger,
  at: Date,
): Promise<void> {
  const before = new Date(at.getTime() - days * 86_400_000 - REMOVAL_GRACE_MS);
  try {
    const removed = await store.removeOlderThan(before);
    if (removed > 0) logger.info({ removed, before }, 'deleted artifacts past retention');
  } catch (error) {
    logger.warn(
      { err: { message: (error as Error).message }, before },
      'could not delete artifacts past retention; trying again next pass',
    );
  }
}

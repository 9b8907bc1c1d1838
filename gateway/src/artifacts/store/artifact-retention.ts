import type { Logger } from 'pino';
import type { ArtifactStore } from './artifact-store.ts';

export interface ArtifactRetention {
  store: Pick<ArtifactStore, 'removeOlderThan'>;
  /** ARTIFACT_RETENTION_DAYS: artifacts written longer ago are removed. */
  days: number;
}

/**
 * Removes artifacts past their retention, on the scheduler's retention pass. An artifact store
 * that is down is logged and tried again next pass: it never stops the records' own retention,
 * and a snapshot whose artifacts are gone reads them as missing.
 */
export async function removeExpiredArtifacts(
  { store, days }: ArtifactRetention,
  logger: Logger,
  at: Date,
): Promise<void> {
  const before = new Date(at.getTime() - days * 86_400_000);
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

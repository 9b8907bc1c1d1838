import type { Logger } from 'pino';
import type { Store } from './store/store.ts';
import { queuedUpdateOf, type UpdateQueue } from './update-queue.ts';
import type { UpdateAdmission } from './update-admission.ts';
import type { WebhookOutbox } from './webhook-outbox.ts';

export interface StuckUpdateSweepOptions {
  store: Store;
  queue: UpdateQueue;
  /** Gives users with updates in their backlog the places they have room for. */
  admission: Pick<UpdateAdmission, 'admitNext'>;
  logger: Logger;
  /** An update's deadline, from its admission to the queue (UPDATE_DEADLINE_MS). */
  deadlineMs: number;
  /**
   * How long an unfinished update is left alone after its last change: an update is recorded
   * before its job is queued, so a younger one may be between the two.
   */
  graceMs: number;
  /** Announces the updates it fails (update.failed). */
  outbox?: Pick<WebhookOutbox, 'updateFailed'>;
  now?: () => Date;
}

export interface SweepReport {
  /** Stored, but recorded as unfinished: recorded done now. */
  recorded: string[];
  queuedAgain: string[];
  failed: string[];
  /** Waiting in their users' backlogs, and admitted now (an admission lost with a gateway). */
  admitted: string[];
}

/**
 * Finds updates queued or running that nothing will finish, and ends that: the lease holder
 * runs it with the scheduler. One whose snapshot is stored is recorded done. An update whose job the queue no longer holds (a gateway died
 * between recording the update and queueing it) is queued again until its deadline, then
 * failed; one the queue still holds past its deadline (a backlog, or a delivery that hangs)
 * is failed with the reason. A delivery that does finish later still records it done: `done`
 * overrides `failed`. Updates waiting in their user's backlog are the user's to wait for, not
 * stuck: their users are given the places they have room for (the gateway that ended their
 * last update may have died before it admitted the next).
 */
export async function sweepStuckUpdates({
  store,
  queue,
  admission,
  logger,
  deadlineMs,
  graceMs,
  outbox,
  now = () => new Date(),
}: StuckUpdateSweepOptions): Promise<SweepReport> {
  const report: SweepReport = { recorded: [], queuedAgain: [], failed: [], admitted: [] };
  const at = now().getTime();
  const unfinished = await store.listUnfinishedUpdates();
  for (const userId of new Set(unfinished.filter((u) => u.admittedAt === null).map((u) => u.userId))) {
    const admitted = await admission.admitNext(userId);
    if (admitted.length > 0) logger.info({ userId, updates: admitted }, "admitted updates waiting in a user's backlog");
    report.admitted.push(...admitted);
  }
  for (const update of unfinished) {
    // Waiting in a backlog (those admitted just now too, as listed before): not stuck.
    if (update.admittedAt === null) continue;
    if (at - update.updatedAt.getTime() < graceMs) continue;
    // Its snapshot is stored: only the ending was lost (a write that did not land, or one a
    // store without atomic conditional updates let a concurrent write undo).
    const written = await store.findSnapshotOfUpdate(update.id);
    if (written) {
      await store.setUpdateState(update.id, { status: 'done', date: written.date, missing: written.missing });
      logger.warn({ updateId: update.id, status: update.status }, 'stuck update was stored; recorded it done');
      report.recorded.push(update.id);
      continue;
    }
    const overdue = at > update.admittedAt.getTime() + deadlineMs + graceMs;
    const held = await queue.holds(update.id);
    if (held && !overdue) continue;
    if (overdue) {
      const reason = held
        ? 'not finished by its deadline; the queue was too far behind, or its delivery hung'
        : 'its job was lost before it could run, and its deadline has passed';
      await store.setUpdateState(update.id, { status: 'failed', reason });
      logger.warn({ updateId: update.id, status: update.status, reason }, 'stuck update failed');
      await outbox
        ?.updateFailed({ userId: update.userId, url: update.url, updateId: update.id, reason })
        .catch((error: unknown) =>
          logger.error({ err: error, updateId: update.id }, 'could not announce a failed update'),
        );
      report.failed.push(update.id);
      continue;
    }
    await queue.enqueue(queuedUpdateOf(update, 'sweep'), { again: true });
    logger.warn(
      { updateId: update.id, status: update.status },
      'stuck update queued again: the queue no longer held its job',
    );
    report.queuedAgain.push(update.id);
  }
  return report;
}

import type { Logger } from 'pino';
import type { ProjectsStore, SnapshotReadsStore, SnapshotsStore, UpdatesStore } from '../store/store.ts';
import type { UpdateRecord } from './store/updates-store.ts';
import { queuedUpdateOf, type UpdateQueue } from './update-queue.ts';
import type { UpdateAdmission } from './update-admission.ts';
import type { WebhookOutbox } from '../alerts/webhook-outbox.ts';

/** What the sweep reads and records: unfinished updates, their snapshots, the snapshots owed an announcement. */
export type StuckUpdatesStore = Pick<UpdatesStore, 'listUnfinishedUpdates' | 'setUpdateState'> &
  Pick<SnapshotsStore, 'findSnapshotOfUpdate' | 'listUnannouncedSnapshots' | 'markSnapshotAnnounced'> &
  Pick<SnapshotReadsStore, 'findSnapshot'> &
  Pick<ProjectsStore, 'findProject'>;

export interface StuckUpdateSweepOptions {
  store: StuckUpdatesStore;
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
  /** Announces the updates it fails (update.failed), and stored snapshots whose budget events were not announced. */
  outbox?: Pick<WebhookOutbox, 'updateFailed' | 'snapshotStored'>;
  now?: () => Date;
}

/** Stored snapshots whose events the sweep puts in the outbox per pass; more wait for the next. */
const ANNOUNCEMENTS_PER_SWEEP = 100;

export interface SweepReport {
  /** Stored, but recorded as unfinished: recorded done now. */
  recorded: string[];
  queuedAgain: string[];
  failed: string[];
  /** Waiting in their users' backlogs, and admitted now (an admission lost with a gateway). */
  admitted: string[];
  /** Updates whose stored snapshot's budget events were not in the outbox: put there now. */
  announced: string[];
}

/**
 * Finds updates queued or running that nothing will finish, and ends that: the lease holder
 * runs it with the scheduler. One whose snapshot is stored is recorded done. An update whose job the queue no longer holds (a gateway died
 * between recording the update and queueing it) is queued again until its deadline, then
 * failed; one the queue still holds past its deadline (a backlog, or a delivery that hangs)
 * is failed with the reason. A delivery that does finish later still records it done: `done`
 * overrides `failed`. Updates waiting in their user's backlog are the user's to wait for, not
 * stuck: their users are given the places they have room for (the gateway that ended their
 * last update may have died before it admitted the next). Last, stored snapshots whose budget
 * events never reached the outbox are announced (announceOwedSnapshots).
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
  const report: SweepReport = { recorded: [], queuedAgain: [], failed: [], admitted: [], announced: [] };
  const at = now().getTime();
  const unfinished = await store.listUnfinishedUpdates();
  report.admitted = await admitBacklogs(unfinished, admission, logger);
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
      if (await failOverdue(update, held, { store, outbox, logger })) report.failed.push(update.id);
      continue;
    }
    await queue.enqueue(queuedUpdateOf(update, 'sweep'), { again: true });
    logger.warn(
      { updateId: update.id, status: update.status },
      'stuck update queued again: the queue no longer held its job',
    );
    report.queuedAgain.push(update.id);
  }
  if (outbox) report.announced = await announceOwedSnapshots(store, outbox, logger, new Date(at - graceMs));
  return report;
}

/** Gives the users with updates waiting in their backlogs the places they have room for; the updates admitted. */
async function admitBacklogs(
  unfinished: readonly UpdateRecord[],
  admission: Pick<UpdateAdmission, 'admitNext'>,
  logger: Logger,
): Promise<string[]> {
  const admittedAll: string[] = [];
  for (const userId of new Set(unfinished.filter((u) => u.admittedAt === null).map((u) => u.userId))) {
    const admitted = await admission.admitNext(userId);
    if (admitted.length > 0) logger.info({ userId, updates: admitted }, "admitted updates waiting in a user's backlog");
    admittedAll.push(...admitted);
  }
  return admittedAll;
}

/**
 * Fails an update past its deadline, with the reason (`held`: the queue still holds its job);
 * false when its announcement could not be put in the outbox, so it stays for the next sweep.
 */
async function failOverdue(
  update: UpdateRecord,
  held: boolean,
  { store, outbox, logger }: Pick<StuckUpdateSweepOptions, 'store' | 'outbox' | 'logger'>,
): Promise<boolean> {
  const reason = held
    ? 'not finished by its deadline; the queue was too far behind, or its delivery hung'
    : 'its job was lost before it could run, and its deadline has passed';
  // Announced before it is recorded failed: an announcement that fails leaves the update
  // unfinished for the next sweep, which announces it again under the same delivery ids.
  const announced = await outbox
    ?.updateFailed({ userId: update.userId, url: update.url, updateId: update.id, reason })
    .then(
      () => true,
      (error: unknown) => {
        logger.error({ err: error, updateId: update.id }, 'could not announce a failed update; the next sweep will');
        return false;
      },
    );
  if (announced === false) return false;
  await store.setUpdateState(update.id, { status: 'failed', reason });
  logger.warn({ updateId: update.id, status: update.status, reason }, 'stuck update failed');
  return true;
}

/**
 * Puts in the outbox the budget events of snapshots stored before `storedBefore` and still
 * marked unannounced: their writer died between the save and its outbox write (a sync update
 * has no queue to deliver it again), or that write failed. The delivery ids are the events'
 * own, so a snapshot whose events did reach the outbox (its writer died before recording it)
 * is sent nothing twice.
 */
async function announceOwedSnapshots(
  store: StuckUpdatesStore,
  outbox: Pick<WebhookOutbox, 'snapshotStored'>,
  logger: Logger,
  storedBefore: Date,
): Promise<string[]> {
  const announced: string[] = [];
  for (const owed of await store.listUnannouncedSnapshots(storedBefore, ANNOUNCEMENTS_PER_SWEEP)) {
    try {
      const project = await store.findProject(owed.userId, owed.url);
      const snapshot = project?.id === owed.projectId ? await store.findSnapshot(project.id, owed.date) : null;
      if (!project || !snapshot) {
        // Removed since (with its project, or by retention): nothing is left to announce.
        await store.markSnapshotAnnounced(owed.updateId);
        continue;
      }
      const deliveries = await outbox.snapshotStored(
        { project, updateId: owed.updateId, date: owed.date, results: snapshot.results },
        { storedAt: owed.storedAt },
      );
      logger.warn(
        { updateId: owed.updateId, date: owed.date, deliveries },
        "a stored snapshot's budget events were not in the outbox; put them there",
      );
      announced.push(owed.updateId);
    } catch (error) {
      logger.error({ err: error, updateId: owed.updateId }, "could not announce a stored snapshot's budget events");
    }
  }
  return announced;
}

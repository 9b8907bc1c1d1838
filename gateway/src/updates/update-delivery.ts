import type { Logger } from 'pino';
import { ApiError } from '@perfwatch/common';
import type {
  ProjectsStore,
  SnapshotReadsStore,
  SnapshotsStore,
  UpdateProgress,
  UpdateRecord,
  UpdatesStore,
} from '../store/store.ts';
import { UpdateInterrupted } from './run-measurer.ts';
import { NoResultError } from './no-result.ts';
import type { UpdateService } from './update-service.ts';
import type { WebhookOutbox } from '../alerts/webhook-outbox.ts';
import type { UpdateAdmission } from './update-admission.ts';
import type { QueuedUpdate } from './update-queue.ts';

/** How one delivery of a queued update ended, for the queue to ack, retry or drop it. */
export type QueuedEnding =
  | { kind: 'done' }
  /** Failed for good (recorded as failed), or its project is gone. */
  | { kind: 'final'; reason: string }
  /** Failed for a reason that may pass; recorded as queued again. */
  | { kind: 'retry'; reason: string }
  /** The outcome could not be recorded (the database is away): deliver it again. */
  | { kind: 'unrecorded' };

/** What a delivery of a queued update works with. */
export interface QueuedUpdateDeps {
  store: Pick<UpdatesStore, 'findUpdate' | 'setUpdateState' | 'setUpdateProgress'> &
    Pick<SnapshotsStore, 'findSnapshotOfUpdate'> &
    Pick<SnapshotReadsStore, 'findSnapshot'> &
    Pick<ProjectsStore, 'findProject'>;
  updates: UpdateService;
  logger: Logger;
  /**
   * From the update's creation: until then a location that is away is offered again, so an
   * agent's restart does not cost the update that location (UPDATE_DEADLINE_MS).
   */
  deadlineMs: number;
  /** Told when an update has ended, to give its user's next waiting update the place. */
  admission?: Pick<UpdateAdmission, 'admitNext'>;
  /** Announces a failed update, and a stored snapshot's events again when a delivery finds it stored. */
  outbox?: Pick<WebhookOutbox, 'snapshotStored' | 'updateFailed'>;
}

/**
 * One delivery of a queued update, whatever queue carried it (JetStream, or the in-process
 * queue of `perfwatch start`): marks it running, runs it, records how it ended.
 */
export async function runQueuedUpdate(
  deps: QueuedUpdateDeps,
  job: QueuedUpdate,
  delivery: number,
  maxDeliver: number,
  signal?: AbortSignal,
): Promise<QueuedEnding> {
  const ending = await deliver(deps, job, { delivery, maxDeliver, ...(signal ? { signal } : {}) });
  if (ending.kind === 'done' || ending.kind === 'final') {
    // A lost admission is found again by the lease holder's sweep.
    await deps.admission
      ?.admitNext(job.userId)
      .catch((error: unknown) =>
        deps.logger.warn({ err: error, userId: job.userId }, 'could not admit the next update of a user'),
      );
  }
  return ending;
}

const PROJECT_REMOVED = 'project removed';

async function deliver(
  deps: QueuedUpdateDeps,
  job: QueuedUpdate,
  { delivery, maxDeliver, signal }: { delivery: number; maxDeliver: number; signal?: AbortSignal },
): Promise<QueuedEnding> {
  const { store, updates, logger, deadlineMs } = deps;
  const log = logger.child({ updateId: job.updateId, requestId: job.requestId, delivery });
  const progress = progressWriter(store, job.updateId, log);
  // Until the update's deadline is known, no failure is final for lack of time.
  let deadlineAt = Number.POSITIVE_INFINITY;
  try {
    // An earlier delivery may have stored the snapshot and lost its ending (the database went
    // away, the gateway died before the ack): record it, measure nothing again.
    const stored = await store.findSnapshotOfUpdate(job.updateId);
    if (stored) return await recordStored(deps, job, stored.date, stored.missing, log);
    const before = await store.findUpdate(job.userId, job.updateId);
    const ended = await endedBefore(deps, job, before, delivery, maxDeliver, log);
    if (ended) return ended;
    await store.setUpdateState(job.updateId, { status: 'running' });
    // From its admission: the time an update waited in its user's backlog is not its own to lose.
    deadlineAt = (before?.admittedAt ?? before?.createdAt ?? new Date()).getTime() + deadlineMs;
    const project = await store.findProject(job.userId, job.url);
    if (!project) {
      await store.setUpdateState(job.updateId, {
        status: 'failed',
        reason: 'the project was removed before the update ran',
      });
      return { kind: 'final', reason: PROJECT_REMOVED };
    }
    const { devices, updateType, requestId } = job;
    // A job queued by an earlier version carries none: the update record has it.
    const revision = job.revision ?? before?.revision;
    const request = { project, devices, updateType, requestId, deadline: new Date(deadlineAt) };
    const outcome = await updates
      .run(
        { ...request, ...(signal ? { signal } : {}), ...(revision ? { revision } : {}) },
        job.updateId,
        'async',
        progress.record,
      )
      .finally(() => progress.written());
    await store.setUpdateState(job.updateId, { status: 'done', date: outcome.date, missing: outcome.missing });
    log.info({ date: outcome.date, missing: outcome.missing.length }, 'queued update done');
    return { kind: 'done' };
  } catch (error) {
    // Every run failing for the page's own reasons (it did not load, a refused target) would
    // fail again: no point retrying. Lost agents, timeouts, a NATS or database blink may pass.
    // Interrupted by this gateway's stop: not the update's fault, and not counted against it.
    const final =
      !(error instanceof UpdateInterrupted) &&
      ((error instanceof NoResultError && error.repeats) || delivery >= maxDeliver || Date.now() >= deadlineAt);
    if (!isExplained(error)) log.warn({ err: error }, 'queued update met an unexpected error');
    return recordFailure(deps, job, failureReason(error), final, log);
  }
}

/**
 * Progress is for people watching: one write at a time carrying the latest counts (runs that
 * end together make one write), never beside a state change (an SQLite-backed server takes
 * one writer at a time), and a failed write fails nothing.
 */
function progressWriter(
  store: Pick<UpdatesStore, 'setUpdateProgress'>,
  updateId: string,
  log: Logger,
): { record(progress: UpdateProgress[]): void; written(): Promise<void> } {
  let latest: UpdateProgress[] | null = null;
  let written = Promise.resolve();
  let writing = false;
  const record = (progress: UpdateProgress[]) => {
    latest = progress;
    if (writing) return;
    writing = true;
    written = (async () => {
      while (latest) {
        const next = latest;
        latest = null;
        await store
          .setUpdateProgress(updateId, next)
          .catch((error: unknown) => log.debug({ err: error }, 'could not record progress'));
      }
      writing = false;
    })();
  };
  return { record, written: () => written };
}

/**
 * An update whose snapshot an earlier delivery stored, recorded done. Its writer may have died
 * before it announced the snapshot's events: announced again (the outbox keeps one delivery
 * per event), from the checks stored with it.
 */
async function recordStored(
  { store, outbox }: QueuedUpdateDeps,
  job: QueuedUpdate,
  date: Date,
  missing: UpdateRecord['missing'],
  log: Logger,
): Promise<QueuedEnding> {
  await store.setUpdateState(job.updateId, { status: 'done', date, missing });
  log.info({ date }, 'queued update was already stored; recorded it done');
  const project = outbox ? await store.findProject(job.userId, job.url) : null;
  const snapshot = project ? await store.findSnapshot(project.id, date) : null;
  if (project && snapshot)
    await outbox!
      .snapshotStored({ project, updateId: job.updateId, date, results: snapshot.results })
      .catch((error: unknown) => log.error({ err: error }, "could not announce the snapshot's budget events"));
  return { kind: 'done' };
}

/** How an update that is not to run again ended, or null when this delivery runs it. */
async function endedBefore(
  deps: QueuedUpdateDeps,
  job: QueuedUpdate,
  before: UpdateRecord | null,
  delivery: number,
  maxDeliver: number,
  log: Logger,
): Promise<QueuedEnding | null> {
  if (before?.status === 'done' || before?.status === 'failed') {
    // A second job of an update that has ended (queued again while its first delivery finished).
    return before.status === 'done' ? { kind: 'done' } : { kind: 'final', reason: before.reason ?? 'failed' };
  }
  if (delivery <= maxDeliver) return null;
  // Earlier deliveries ended without an outcome (their gateways stopped or died mid-way):
  // an update that takes its gateway down each time must not go round for ever.
  const reason = `its ${delivery - 1} deliveries ended without an outcome (the gateways running it stopped)`;
  await failAnnounced(deps, job, reason, log);
  return { kind: 'final', reason };
}

/**
 * An update failed for good: its `update.failed` event goes into the outbox first, and only
 * then is the update recorded failed. Should the outbox write fail, the update is left
 * unfinished: the stuck-update sweep fails it later, announcing it the same way (the event's
 * delivery id is the update's, so announcing twice stores it once). Recorded failed first, an
 * outbox that failed would have lost the alert for good.
 */
async function failAnnounced(deps: QueuedUpdateDeps, job: QueuedUpdate, reason: string, log: Logger): Promise<void> {
  try {
    await deps.outbox?.updateFailed({ userId: job.userId, url: job.url, updateId: job.updateId, reason });
  } catch (error) {
    log.error({ err: error, reason }, 'could not announce a failed update; the stuck-update sweep will');
    return;
  }
  await deps.store.setUpdateState(job.updateId, { status: 'failed', reason });
  log.warn({ reason }, 'queued update failed');
}

const isExplained = (error: unknown): error is NoResultError | ApiError | UpdateInterrupted =>
  error instanceof NoResultError || error instanceof ApiError || error instanceof UpdateInterrupted;

/**
 * What the update's owner reads of its failure (`/v1/updates/{id}`). Errors of our own say
 * what happened; anything else — a database driver's or NATS client's message, which can name
 * internal hosts — stays in the gateway's log, and the owner is told only that much.
 */
function failureReason(error: unknown): string {
  if (error instanceof NoResultError) return [error.message, ...error.reasons].join(' ');
  if (error instanceof ApiError) return [error.message, ...error.errors].join(' ');
  if (error instanceof UpdateInterrupted) return error.message;
  return 'the gateway met an internal error (its log has the details)';
}

/** A failed delivery recorded: failed for good, or queued again; unrecorded when the store is away. */
async function recordFailure(
  deps: QueuedUpdateDeps,
  job: QueuedUpdate,
  reason: string,
  final: boolean,
  log: Logger,
): Promise<QueuedEnding> {
  try {
    if (final) {
      await failAnnounced(deps, job, reason, log);
      return { kind: 'final', reason };
    }
    await deps.store.setUpdateState(job.updateId, { status: 'queued', reason });
    log.warn({ reason }, 'queued update will be tried again');
    return { kind: 'retry', reason };
  } catch (stateError) {
    log.error({ err: stateError }, 'could not record the update state; the job will be delivered again');
    return { kind: 'unrecorded' };
  }
}

import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import { nanos } from '@nats-io/nats-core';
import {
  AckPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type Consumer,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, DEVICES, UPDATE_TYPES } from '@perfwatch/common';
import type { Store, UpdateProgress, UpdateRecord } from '../store/store.ts';
import { UpdateInterrupted } from './run-measurer.ts';
import { NoResultError, type UpdateService } from './update-service.ts';
import type { WebhookOutbox } from '../alerts/webhook-outbox.ts';
import type { UpdateAdmission } from './update-admission.ts';

/** The durable work queue of async and scheduled updates, shared by every gateway replica. */
export const UPDATE_STREAM = 'PERFWATCH_UPDATES';
export const UPDATE_SUBJECT = 'perfwatch.updates.v1.run';
/**
 * Each update's job on a subject of its own, so whether the queue still holds it (waiting, or
 * delivered and not yet acknowledged) is one lookup; jobs of earlier versions on the bare
 * subject are still taken.
 */
export const updateSubject = (updateId: string) => `${UPDATE_SUBJECT}.${updateId}`;
const DURABLE = 'perfwatch-gateways';

export const queuedUpdateSchema = z.object({
  // One subject token: update ids are UUIDs.
  updateId: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/),
  userId: z.string().min(1),
  /** The project, by its owner and URL: read again when the job runs, with its settings then. */
  url: z.string().min(1),
  devices: z.array(z.enum(DEVICES)).min(1),
  updateType: z.enum(UPDATE_TYPES),
  requestId: z.string().max(200),
});
export type QueuedUpdate = z.infer<typeof queuedUpdateSchema>;

/** The job of a recorded update, queued again (after a restart, or by the sweep for stuck updates). */
export function queuedUpdateOf(update: UpdateRecord, requestIdPrefix: string): QueuedUpdate {
  return {
    updateId: update.id,
    userId: update.userId,
    url: update.url,
    devices: update.devices,
    updateType: update.updateType,
    requestId: `${requestIdPrefix}-${update.id.slice(0, 8)}`,
  };
}

export interface UpdateQueueOptions extends QueuedUpdateDeps {
  nc: NatsConnection;
  /** Updates this gateway runs at once. */
  workers: number;
  /** Without a sign of life for this long, a job goes to another gateway. */
  ackWaitMs: number;
  /** Deliveries before an update is marked failed (counted by perfwatch, not by JetStream). */
  maxDeliver: number;
  /** Wait before a failed delivery is tried again. */
  retryDelayMs: number;
}

export interface UpdateQueue {
  /**
   * Persists the job, deduplicated by update id; resolves once it is stored. `again`: the job
   * of an update the queue no longer holds, queued once more (see stuck-updates.ts).
   */
  enqueue(job: QueuedUpdate, options?: { again?: boolean }): Promise<void>;
  /** Whether the queue holds the update's job: waiting, or delivered and not yet finished. */
  holds(updateId: string): Promise<boolean>;
  /** Stops taking jobs and waits for the running ones. */
  stop(): Promise<void>;
}

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
  store: Store;
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
    const outcome = await updates
      .run(
        { project, devices, updateType, requestId, deadline: new Date(deadlineAt), ...(signal ? { signal } : {}) },
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
  store: Store,
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

/** A publish retried within this window with the same update id is stored once. */
const DUPLICATE_WINDOW_MS = 10 * 60_000;
/** Jobs delivered and not yet acknowledged, over every replica: far above replicas × UPDATE_WORKERS. */
const MAX_ACK_PENDING = 10_000;
/** A job's ack timer is kept alive this many times per ack wait, and never more often than every MIN_WORKING_EVERY_MS. */
const WORKING_PER_ACK_WAIT = 3;
const MIN_WORKING_EVERY_MS = 100;
/** A terminated job's reason as JetStream keeps it. */
const MAX_TERM_REASON_CHARS = 200;
/** How long one fetch waits for jobs before asking again (stopping is noticed at the latest then). */
const FETCH_EXPIRES_MS = 2_000;
/** The wait before asking again after a fetch failed (NATS restarting, JetStream electing a leader). */
const FETCH_RETRY_MS = 1_000;

/**
 * Async updates through a JetStream work-queue stream. Any gateway replica takes jobs (a pull
 * consumer it asks for exactly as many as it has free workers, so none waits in a buffer while
 * its ack timer runs), keeps the job's ack timer alive while it works, and acks only once the
 * snapshot and the update's state are stored. A gateway that dies mid-job leaves it
 * unacknowledged: JetStream delivers it again to a replica after `ackWaitMs`, and the store's
 * idempotent write (one snapshot per update id) makes the second delivery harmless.
 */
export async function startUpdateQueue(options: UpdateQueueOptions): Promise<UpdateQueue> {
  const jsm = await jetstreamManager(options.nc);
  await ensureStream(jsm);
  await ensureConsumer(jsm, options.ackWaitMs);
  const js = jetstream(options.nc);
  return new JetStreamUpdateQueue(options, jsm, js, await js.consumers.get(UPDATE_STREAM, DURABLE));
}

/** The work-queue stream, created, or brought to this version's subjects and duplicate window. */
async function ensureStream(jsm: JetStreamManager): Promise<void> {
  const subjects = [UPDATE_SUBJECT, updateSubject('*')];
  const duplicate_window = nanos(DUPLICATE_WINDOW_MS);
  const config = {
    name: UPDATE_STREAM,
    subjects,
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window,
  };
  await jsm.streams.add(config).catch(async (error: unknown) => {
    if (!/already in use|stream name already/i.test((error as Error).message)) throw error;
    await jsm.streams.update(UPDATE_STREAM, { subjects, duplicate_window });
  });
}

/**
 * The gateways' durable pull consumer. No delivery limit in JetStream (-1): a job whose last
 * allowed delivery died with its gateway would stay in the stream, never delivered again, its
 * update unfinished. runQueuedUpdate counts deliveries instead and ends such an update failed,
 * with the reason.
 */
async function ensureConsumer(jsm: JetStreamManager, ackWaitMs: number): Promise<void> {
  const limits = { ack_wait: nanos(ackWaitMs), max_deliver: -1, max_ack_pending: MAX_ACK_PENDING };
  await jsm.consumers
    .add(UPDATE_STREAM, { durable_name: DURABLE, ack_policy: AckPolicy.Explicit, ...limits })
    .catch(async (error: unknown) => {
      if (!/already in use|exists/i.test((error as Error).message)) throw error;
      await jsm.consumers.update(UPDATE_STREAM, DURABLE, limits);
    });
}

class JetStreamUpdateQueue implements UpdateQueue {
  readonly #options: UpdateQueueOptions;
  readonly #jsm: JetStreamManager;
  readonly #js: JetStreamClient;
  #stopping = false;
  #fetching: { stop(): void } | null = null;
  readonly #running = new Set<Promise<void>>();
  // Stopping ends the waits for absent locations; runs already with an agent finish.
  readonly #halt = new AbortController();
  readonly #loop: Promise<void>;

  constructor(options: UpdateQueueOptions, jsm: JetStreamManager, js: JetStreamClient, consumer: Consumer) {
    this.#options = options;
    this.#jsm = jsm;
    this.#js = js;
    this.#loop = this.#take(consumer);
  }

  async enqueue(job: QueuedUpdate, { again = false }: { again?: boolean } = {}): Promise<void> {
    // Queued again, the job must not be taken for a duplicate of its first publish.
    await this.#js.publish(updateSubject(job.updateId), JSON.stringify(queuedUpdateSchema.parse(job)), {
      msgID: again ? `${job.updateId}.again.${Date.now()}` : job.updateId,
    });
  }

  async holds(updateId: string): Promise<boolean> {
    // null: no message on the update's subject (acknowledged, terminated, or never queued).
    return (await this.#jsm.streams.getMessage(UPDATE_STREAM, { last_by_subj: updateSubject(updateId) })) !== null;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#halt.abort();
    this.#fetching?.stop();
    await this.#loop;
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** Asks for exactly as many jobs as there are free workers, until stopped. */
  async #take(consumer: Consumer): Promise<void> {
    const running = this.#running;
    while (!this.#stopping) {
      const free = this.#options.workers - running.size;
      if (free <= 0) {
        await Promise.race(running);
        continue;
      }
      try {
        const batch = await consumer.fetch({ max_messages: free, expires: FETCH_EXPIRES_MS });
        this.#fetching = batch;
        for await (const msg of batch) {
          const job = this.#handle(msg).finally(() => running.delete(job));
          running.add(job);
        }
      } catch (error) {
        if (this.#stopping) break;
        this.#options.logger.warn(
          { err: { message: (error as Error).message } },
          'could not fetch queued updates; retrying',
        );
        await sleep(FETCH_RETRY_MS);
      }
    }
  }

  async #handle(msg: JsMsg): Promise<void> {
    const { logger, ackWaitMs, maxDeliver, retryDelayMs } = this.#options;
    let job: QueuedUpdate;
    try {
      job = queuedUpdateSchema.parse(msg.json());
    } catch (error) {
      logger.error({ err: error, seq: msg.seq }, 'dropped a queued job that does not match the v1 contract');
      msg.term('malformed job');
      return;
    }
    // Tells JetStream the job is being worked on, so it is not handed to another replica.
    const alive = setInterval(
      () => msg.working(),
      Math.max(MIN_WORKING_EVERY_MS, Math.floor(ackWaitMs / WORKING_PER_ACK_WAIT)),
    );
    const halt = this.#halt.signal;
    try {
      const ending = await runQueuedUpdate(this.#options, job, msg.info.deliveryCount, maxDeliver, halt);
      if (ending.kind === 'done') msg.ack();
      else if (ending.kind === 'final') msg.term(ending.reason.slice(0, MAX_TERM_REASON_CHARS));
      else if (ending.kind === 'retry') msg.nak(halt.aborted ? 0 : retryDelayMs);
      // 'unrecorded': left unacknowledged; JetStream delivers it again after ackWaitMs.
    } finally {
      clearInterval(alive);
    }
  }
}

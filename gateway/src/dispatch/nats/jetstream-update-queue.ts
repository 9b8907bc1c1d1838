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
import { queuedUpdateSchema, type QueuedUpdate, type UpdateQueue } from '../../updates/update-queue.ts';
import { dedupeId, UpdateDeliveries, type DeliveryOptions } from '../delivery-rules.ts';

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

export interface JetStreamQueueOptions extends DeliveryOptions {
  nc: NatsConnection;
  /** Without a sign of life for this long, a job goes to another gateway. */
  ackWaitMs: number;
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
export async function startJetStreamUpdateQueue(options: JetStreamQueueOptions): Promise<UpdateQueue> {
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
 * update unfinished. runQueuedUpdate (updates/update-delivery.ts) counts deliveries instead
 * and ends such an update failed, with the reason.
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
  readonly #options: JetStreamQueueOptions;
  readonly #jsm: JetStreamManager;
  readonly #js: JetStreamClient;
  readonly #deliveries: UpdateDeliveries;
  #fetching: { stop(): void } | null = null;
  readonly #loop: Promise<void>;

  constructor(options: JetStreamQueueOptions, jsm: JetStreamManager, js: JetStreamClient, consumer: Consumer) {
    this.#options = options;
    this.#jsm = jsm;
    this.#js = js;
    this.#deliveries = new UpdateDeliveries(options);
    this.#loop = this.#take(consumer);
  }

  async enqueue(job: QueuedUpdate, { again = false }: { again?: boolean } = {}): Promise<void> {
    await this.#js.publish(updateSubject(job.updateId), JSON.stringify(queuedUpdateSchema.parse(job)), {
      msgID: dedupeId(job.updateId, again),
    });
  }

  async holds(updateId: string): Promise<boolean> {
    // null: no message on the update's subject (acknowledged, terminated, or never queued).
    return (await this.#jsm.streams.getMessage(UPDATE_STREAM, { last_by_subj: updateSubject(updateId) })) !== null;
  }

  async stop(): Promise<void> {
    this.#deliveries.halt();
    this.#fetching?.stop();
    await this.#loop;
    await this.#deliveries.drain();
  }

  /** Asks for exactly as many jobs as there are free workers, until stopped. */
  async #take(consumer: Consumer): Promise<void> {
    const deliveries = this.#deliveries;
    while (!deliveries.stopping) {
      const free = deliveries.free;
      if (free <= 0) {
        await deliveries.oneEnded();
        continue;
      }
      try {
        const batch = await consumer.fetch({ max_messages: free, expires: FETCH_EXPIRES_MS });
        this.#fetching = batch;
        for await (const msg of batch) void this.#handle(msg);
      } catch (error) {
        if (deliveries.stopping) break;
        this.#options.logger.warn(
          { err: { message: (error as Error).message } },
          'could not fetch queued updates; retrying',
        );
        await sleep(FETCH_RETRY_MS);
      }
    }
  }

  async #handle(msg: JsMsg): Promise<void> {
    const { logger, ackWaitMs } = this.#options;
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
    try {
      const step = await this.#deliveries.deliver(job, msg.info.deliveryCount);
      if (step.kind === 'finished') {
        if (step.reason === undefined) msg.ack();
        else msg.term(step.reason.slice(0, MAX_TERM_REASON_CHARS));
      } else if (step.kind === 'again') msg.nak(step.delayMs);
      // 'unrecorded': left unacknowledged; JetStream delivers it again after ackWaitMs.
    } finally {
      clearInterval(alive);
    }
  }
}

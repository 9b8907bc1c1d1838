import { runQueuedUpdate, type QueuedEnding, type QueuedUpdateDeps } from '../updates/update-delivery.ts';
import type { QueuedUpdate } from '../updates/update-queue.ts';
import type { UpdatesStore } from '../updates/store/updates-store.ts';

/**
 * The rules every update queue delivers by, JetStream's and local mode's alike: what a job is
 * de-duplicated by, what is done with it after a delivery, and what a stop does. Each queue
 * only maps them onto its own carrier (acks and naks, or timers in the process).
 */
export interface DeliveryOptions extends QueuedUpdateDeps {
  /** A delivery's store, which also gives the updates the last process left unfinished (local mode). */
  store: QueuedUpdateDeps['store'] & Pick<UpdatesStore, 'listUnfinishedUpdates'>;
  /** Updates this gateway runs at once. */
  workers: number;
  /** Deliveries before an update is marked failed (counted by perfwatch, not by the carrier). */
  maxDeliver: number;
  /** Wait before a failed delivery is tried again. */
  retryDelayMs: number;
}

/**
 * The id an enqueue is de-duplicated by: the update's, so an update enqueued twice (a retried
 * publish, a tick enqueued by two scheduler holders) is held once. Queued `again` (the queue no
 * longer holds it, stuck-updates.ts), it must not be taken for a duplicate of its first
 * enqueue, so it gets an id of its own.
 */
export function dedupeId(updateId: string, again: boolean, now: number = Date.now()): string {
  return again ? `${updateId}.again.${now}` : updateId;
}

/** What a queue does with a job after one delivery. */
export type DeliveryStep =
  /** Let the job go; with `reason` it failed for good (or its project is gone). */
  | { kind: 'finished'; reason?: string }
  /** Deliver it again after `delayMs`. */
  | { kind: 'again'; delayMs: number }
  /** Its outcome could not be recorded (the database is away): deliver it again after the carrier's own wait. */
  | { kind: 'unrecorded' };

/**
 * How a delivery's ending moves its job. A delivery cut short by the queue's stop is handed
 * back at once: the wait is for a failure that may pass, and the stop was not the update's.
 */
export function stepAfter(
  ending: QueuedEnding,
  { retryDelayMs, stopping }: { retryDelayMs: number; stopping: boolean },
): DeliveryStep {
  switch (ending.kind) {
    case 'done':
      return { kind: 'finished' };
    case 'final':
      return { kind: 'finished', reason: ending.reason };
    case 'retry':
      return { kind: 'again', delayMs: stopping ? 0 : retryDelayMs };
    case 'unrecorded':
      return { kind: 'unrecorded' };
  }
}

/**
 * A queue's deliveries in progress, and its stop: `halt` takes no more and ends the waits for
 * absent locations (those updates stay queued: runs already with an agent finish), `drain`
 * waits for the deliveries still running.
 */
export class UpdateDeliveries {
  readonly #options: DeliveryOptions;
  readonly #running = new Set<Promise<DeliveryStep>>();
  readonly #halt = new AbortController();

  constructor(options: DeliveryOptions) {
    this.#options = options;
  }

  get stopping(): boolean {
    return this.#halt.signal.aborted;
  }

  /** Deliveries this gateway may start now. */
  get free(): number {
    return this.#options.workers - this.#running.size;
  }

  /** One delivery of the job (its `delivery`th), and what to do with the job after it. */
  deliver(job: QueuedUpdate, delivery: number): Promise<DeliveryStep> {
    const { maxDeliver, retryDelayMs } = this.#options;
    const signal = this.#halt.signal;
    const step = runQueuedUpdate(this.#options, job, delivery, maxDeliver, signal).then((ending) =>
      stepAfter(ending, { retryDelayMs, stopping: signal.aborted }),
    );
    this.#running.add(step);
    void step.finally(() => this.#running.delete(step)).catch(() => undefined);
    return step;
  }

  /** Resolves when a running delivery ends. */
  async oneEnded(): Promise<void> {
    await Promise.race(this.#running).catch(() => undefined);
  }

  halt(): void {
    this.#halt.abort();
  }

  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }
}

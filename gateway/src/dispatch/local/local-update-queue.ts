import Queue from 'yocto-queue';
import { queuedUpdateOf, queuedUpdateSchema, type QueuedUpdate, type UpdateQueue } from '../../updates/update-queue.ts';
import { dedupeId, UpdateDeliveries, type DeliveryOptions } from '../delivery-rules.ts';

/** A job waiting here for a worker, with the delivery it will be. */
interface Waiting {
  job: QueuedUpdate;
  key: string;
  delivery: number;
}

/**
 * The jobs the queue holds, by their de-duplication id, and how many each update has: waiting,
 * running, or between deliveries.
 */
class HeldJobs {
  readonly #keys = new Set<string>();
  readonly #perUpdate = new Map<string, number>();

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  holdsUpdate(updateId: string): boolean {
    return this.#perUpdate.has(updateId);
  }

  hold({ job, key }: Pick<Waiting, 'job' | 'key'>): void {
    this.#keys.add(key);
    this.#perUpdate.set(job.updateId, (this.#perUpdate.get(job.updateId) ?? 0) + 1);
  }

  release({ job, key }: Pick<Waiting, 'job' | 'key'>): void {
    this.#keys.delete(key);
    const left = (this.#perUpdate.get(job.updateId) ?? 1) - 1;
    if (left > 0) this.#perUpdate.set(job.updateId, left);
    else this.#perUpdate.delete(job.updateId);
  }
}

/**
 * The update queue of `perfwatch start` without NATS: jobs wait in this process, and the store
 * is what makes them durable. Every accepted update is recorded `queued` before it is enqueued,
 * so on start the queue takes up whatever the last process left queued or running; stopping
 * finishes the running updates and leaves the waiting ones queued for the next start. It
 * delivers by the JetStream queue's rules (delivery-rules.ts); where JetStream would deliver a
 * job again, a timer here does.
 */
export async function startLocalUpdateQueue(options: DeliveryOptions): Promise<UpdateQueue> {
  const { store, logger, retryDelayMs } = options;
  const deliveries = new UpdateDeliveries(options);
  const waiting = new Queue<Waiting>();
  const retries = new Set<NodeJS.Timeout>();
  const held = new HeldJobs();
  function later(entry: Waiting, delayMs: number): void {
    const timer = setTimeout(() => {
      retries.delete(timer);
      submit({ ...entry, delivery: entry.delivery + 1 });
    }, delayMs);
    retries.add(timer);
  }
  function submit(entry: Waiting): void {
    if (deliveries.stopping) return;
    waiting.enqueue(entry);
    startWaiting();
  }
  function startWaiting(): void {
    while (!deliveries.stopping && deliveries.free > 0 && waiting.size > 0) {
      const entry = waiting.dequeue()!;
      void deliveries.deliver(entry.job, entry.delivery).then((step) => {
        // A stop leaves the job queued in the store, for the next start.
        if (step.kind === 'finished') held.release(entry);
        else if (!deliveries.stopping) later(entry, step.kind === 'again' ? step.delayMs : retryDelayMs);
        startWaiting();
      });
    }
  }

  // Those still waiting in their user's backlog are admitted when the user has room.
  const left = (await store.listUnfinishedUpdates()).filter((update) => update.admittedAt !== null);
  for (const update of left) {
    const job = queuedUpdateOf(update, 'resumed');
    const entry = { job, key: job.updateId, delivery: update.attempts + 1 };
    held.hold(entry);
    submit(entry);
  }
  if (left.length > 0)
    logger.info({ updates: left.length }, 'taking up the updates the last run left queued or running');

  return {
    async enqueue(job, { again = false } = {}) {
      const parsed = queuedUpdateSchema.parse(job);
      if (deliveries.stopping) throw new Error('the update queue is stopping');
      const key = dedupeId(parsed.updateId, again);
      if (held.has(key)) return;
      const entry = { job: parsed, key, delivery: 1 };
      held.hold(entry);
      submit(entry);
    },
    async holds(updateId) {
      return held.holdsUpdate(updateId);
    },
    async stop() {
      deliveries.halt();
      for (const timer of retries) clearTimeout(timer);
      await deliveries.drain();
    },
  };
}

import pLimit from 'p-limit';
import {
  queuedUpdateOf,
  queuedUpdateSchema,
  runQueuedUpdate,
  type QueuedUpdate,
  type QueuedUpdateDeps,
  type UpdateQueue,
} from '../../updates/update-queue.ts';

export interface LocalUpdateQueueOptions extends QueuedUpdateDeps {
  /** Updates run at once. */
  workers: number;
  /** Deliveries before an update is marked failed. */
  maxDeliver: number;
  /** Wait before a failed delivery is tried again. */
  retryDelayMs: number;
}

/**
 * The update queue of `perfwatch start` without NATS: jobs wait in this process, and the store
 * is what makes them durable. Every accepted update is recorded `queued` before it is enqueued,
 * so on start the queue takes up whatever the last process left queued or running; stopping
 * finishes the running updates and leaves the waiting ones queued for the next start.
 */
export async function startLocalUpdateQueue(options: LocalUpdateQueueOptions): Promise<UpdateQueue> {
  const { store, logger, workers, maxDeliver, retryDelayMs } = options;
  const slots = pLimit(workers);
  const running = new Set<Promise<void>>();
  const retries = new Set<NodeJS.Timeout>();
  // Update ids waiting or running here: an update enqueued twice runs once, as JetStream's
  // de-duplication by message id does for the NATS queue.
  const pending = new Set<string>();
  let stopping = false;
  // Stopping ends the waits for absent locations: those updates stay queued for the next start.
  const halt = new AbortController();

  function submit(job: QueuedUpdate, delivery: number): void {
    const task = slots(async () => {
      if (stopping) return;
      const ending = await runQueuedUpdate(options, job, delivery, maxDeliver, halt.signal);
      if (ending.kind === 'retry' || ending.kind === 'unrecorded') {
        const timer = setTimeout(() => {
          retries.delete(timer);
          if (!stopping) submit(job, delivery + 1);
        }, retryDelayMs);
        retries.add(timer);
      } else {
        pending.delete(job.updateId);
      }
    });
    running.add(task);
    void task.finally(() => running.delete(task));
  }

  // Those still waiting in their user's backlog are admitted when the user has room.
  const left = (await store.listUnfinishedUpdates()).filter((update) => update.admittedAt !== null);
  for (const update of left) {
    pending.add(update.id);
    submit(queuedUpdateOf(update, 'resumed'), update.attempts + 1);
  }
  if (left.length > 0)
    logger.info({ updates: left.length }, 'taking up the updates the last run left queued or running');

  return {
    async enqueue(job) {
      const parsed = queuedUpdateSchema.parse(job);
      if (stopping) throw new Error('the update queue is stopping');
      if (pending.has(parsed.updateId)) return;
      pending.add(parsed.updateId);
      submit(parsed, 1);
    },
    async holds(updateId) {
      return pending.has(updateId);
    },
    async stop() {
      stopping = true;
      halt.abort();
      for (const timer of retries) clearTimeout(timer);
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}

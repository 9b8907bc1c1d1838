import { z } from 'zod';
import { DEVICES, revisionSchema, UPDATE_TYPES } from '@perfwatch/common';
import type { UpdateRecord } from '../store/store.ts';

/**
 * What every update queue carries and promises, whatever transport holds it: the JetStream
 * queue (dispatch/nats/jetstream-update-queue.ts) or the in-process one of local mode
 * (dispatch/local/local-update-queue.ts). One delivery of a job is update-delivery.ts.
 */
export const queuedUpdateSchema = z.object({
  // One subject token: update ids are UUIDs.
  updateId: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/),
  userId: z.string().min(1),
  /** The project, by its owner and URL: read again when the job runs, with its settings then. */
  url: z.string().min(1),
  devices: z.array(z.enum(DEVICES)).min(1),
  updateType: z.enum(UPDATE_TYPES),
  requestId: z.string().max(200),
  /**
   * The code change measured, for its snapshot; absent when none was given. A job queued by an
   * earlier version has none: its delivery takes the update record's.
   */
  revision: revisionSchema.optional(),
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
    ...(update.revision ? { revision: update.revision } : {}),
  };
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

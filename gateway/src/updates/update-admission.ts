import type { Logger } from 'pino';
import { UpdateRefused } from './update-refused.ts';
import type { NewUpdate, UpdatesStore } from './store/updates-store.ts';
import { queuedUpdateOf, type UpdateQueue } from './update-queue.ts';

/**
 * Fair use of the update queue between users. Every accepted update enters its user's backlog
 * in the store; only `perUser` of a user's updates are in the queue (waiting for a gateway, or
 * running) at once, and each one ending admits the user's next. So a user with hundreds of
 * updates queued holds `perUser` places in the queue, never the whole of it, and another user's
 * update is taken up as soon as a gateway worker is free. The store is what every gateway
 * replica shares, so the limit holds across them (two replicas admitting for one user in the
 * same instant may let one more through; the next ending admits nothing then). Within a
 * gateway, a user's admissions take turns.
 */
export interface UpdateAdmission {
  /**
   * Records a new update in its user's backlog, then admits what the user has room for. When
   * the new update was admitted and its job could not be stored, it is failed and this throws
   * 503 (`refuseUnqueued`, for a caller who can be told to try again: an API client is never
   * told an update was accepted that nothing will run); otherwise the sweep queues it later.
   */
  submit(update: NewUpdate, requestId: string, options?: { refuseUnqueued?: boolean }): Promise<void>;
  /** Admits the user's oldest waiting updates while the user has room in the queue; returns their ids. */
  admitNext(userId: string): Promise<string[]>;
}

export function createUpdateAdmission({
  store,
  queue,
  logger,
  perUser,
}: {
  store: Pick<UpdatesStore, 'createUpdate' | 'admitUpdates' | 'setUpdateState'>;
  queue: () => UpdateQueue;
  logger: Logger;
  perUser: number;
}): UpdateAdmission {
  // One admission per user at a time in this gateway: two endings at once would each count the
  // same free places and admit twice as many.
  const turns = new Map<string, Promise<unknown>>();
  function admit(
    userId: string,
    requestIds: ReadonlyMap<string, string> = new Map(),
  ): Promise<{ admitted: string[]; unqueued: Set<string> }> {
    const turn = (turns.get(userId) ?? Promise.resolve()).then(() =>
      admitNow({ store, queue, logger, perUser }, userId, requestIds),
    );
    const settled = turn.catch(() => undefined);
    turns.set(userId, settled);
    void settled.then(() => {
      if (turns.get(userId) === settled) turns.delete(userId);
    });
    return turn;
  }

  return {
    async submit(update, requestId, { refuseUnqueued = false } = {}) {
      await store.createUpdate(update);
      const { unqueued } = await admit(update.userId, new Map([[update.id, requestId]]));
      if (refuseUnqueued && unqueued.has(update.id)) {
        await store
          .setUpdateState(update.id, { status: 'failed', reason: 'the update could not be queued' })
          .catch(() => undefined);
        throw new UpdateRefused('NOT_QUEUED', 'The update could not be queued. Try again later.');
      }
    },
    async admitNext(userId) {
      return (await admit(userId)).admitted;
    },
  };
}

/** Admits a user's next updates and queues them; the ids whose job could not be stored are in `unqueued`. */
async function admitNow(
  {
    store,
    queue,
    logger,
    perUser,
  }: { store: Pick<UpdatesStore, 'admitUpdates'>; queue: () => UpdateQueue; logger: Logger; perUser: number },
  userId: string,
  requestIds: ReadonlyMap<string, string>,
): Promise<{ admitted: string[]; unqueued: Set<string> }> {
  const admitted = await store.admitUpdates(userId, perUser);
  const unqueued = new Set<string>();
  for (const update of admitted) {
    const job = queuedUpdateOf(update, 'admitted');
    try {
      await queue().enqueue({ ...job, requestId: requestIds.get(update.id) ?? job.requestId });
    } catch (error) {
      // Stays admitted and unqueued: the lease holder's sweep queues it again (stuck-updates.ts).
      logger.error({ err: error, updateId: update.id }, 'could not queue an admitted update');
      unqueued.add(update.id);
    }
  }
  return { admitted: admitted.map((u) => u.id), unqueued };
}

import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ApiError } from '@perfwatch/common';
import type { Store } from './store/store.ts';
import type { UpdateQueue } from './update-queue.ts';
import type { UpdateRequest } from './update-service.ts';

/** Starts an update without waiting for it (mode=async); resolves with its id once it is safe. */
export type StartAsync = (request: UpdateRequest) => Promise<string>;

/**
 * `mode=async`: refuses with 429 when a location of the project already has too many updates
 * waiting (instead of letting the queue grow without bound), records the update as `queued`,
 * and only answers once JetStream has stored the job. An update whose job could not be stored
 * is marked failed and the caller gets a 503: nothing acknowledged is ever dropped.
 */
export function createAsyncUpdates({ store, queue, logger, maxPendingPerLocation }: { store: Store; queue: UpdateQueue; logger: Logger; maxPendingPerLocation: number }): StartAsync {
  return async ({ project, devices, updateType, requestId }) => {
    for (const location of project.locations) {
      const pending = await store.countPendingUpdates(location);
      if (pending >= maxPendingPerLocation) {
        throw new ApiError('TOO_MANY_REQUESTS', `Too many updates are waiting for ${location}. Try again later.`, [`${pending} updates queued or running for ${location}; the limit is ${maxPendingPerLocation}`], {
          headers: { 'Retry-After': '60' },
        });
      }
    }
    const id = randomUUID();
    await store.createUpdate({ id, userId: project.userId, projectId: project.id, url: project.url, devices, locations: project.locations, updateType });
    try {
      await queue.enqueue({ updateId: id, userId: project.userId, url: project.url, devices: [...devices], updateType, requestId });
    } catch (error) {
      logger.error({ err: error, updateId: id, requestId }, 'could not queue an update');
      await store.setUpdateState(id, { status: 'failed', reason: 'the update could not be queued' }).catch(() => undefined);
      throw new ApiError('SERVICE_UNAVAILABLE', 'The update could not be queued. Try again later.', [], { cause: error });
    }
    return id;
  };
}

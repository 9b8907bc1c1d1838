import { randomUUID } from 'node:crypto';
import type { UpdatesStore } from './store/updates-store.ts';
import type { UpdateAdmission } from './update-admission.ts';
import type { UpdateRequest } from './update-service.ts';
import { UpdateRefused } from './update-refused.ts';

/** Starts an update without waiting for it (mode=async); resolves with its id once it is safe. */
export type StartAsync = (request: UpdateRequest) => Promise<string>;

export interface AsyncUpdateLimits {
  /** Runs one user's unfinished async and scheduled updates may hold (MAX_QUEUED_RUNS_PER_USER). */
  queuedRunsPerUser: number;
  /** Updates queued or running per location, all users together: what keeps the store and queue bounded. */
  pendingPerLocation: number;
}

/**
 * `mode=async`: refuses (UpdateRefused, a 429) when the caller's own backlog is full (its message counts the
 * caller's runs, and nobody else's), or when a location has as many updates waiting as the
 * service takes (a message that says so and gives no count: other users' load is theirs).
 * Otherwise the update enters its user's backlog and, when the user has room, the queue; the
 * answer comes once the store (and JetStream, for an admitted update) holds it.
 */
export function createAsyncUpdates({
  store,
  admission,
  limits,
}: {
  store: Pick<UpdatesStore, 'userBacklog' | 'countPendingUpdates'>;
  admission: UpdateAdmission;
  limits: AsyncUpdateLimits;
}): StartAsync {
  return async ({ project, devices, updateType, requestId, revision }) => {
    const runs = devices.length * project.locations.length * project.runs;
    const backlog = await store.userBacklog(project.userId);
    if (backlog.runs + runs > limits.queuedRunsPerUser) {
      throw new UpdateRefused('BACKLOG_FULL', 'You have too many updates waiting. Try again when some have finished.', [
        `your ${backlog.updates} unfinished updates hold ${backlog.runs} runs; this one adds ${runs}; the limit is ${limits.queuedRunsPerUser} runs per user`,
      ]);
    }
    for (const location of project.locations) {
      if ((await store.countPendingUpdates(location)) >= limits.pendingPerLocation) {
        throw new UpdateRefused(
          'LOCATION_FULL',
          `The service has as many updates waiting for ${location} as it takes. Try again later.`,
        );
      }
    }
    const id = randomUUID();
    await admission.submit(
      {
        id,
        userId: project.userId,
        projectId: project.id,
        url: project.url,
        devices,
        locations: project.locations,
        updateType,
        runs: project.runs,
        ...(revision ? { revision } : {}),
      },
      requestId,
      { refuseUnqueued: true },
    );
    return id;
  };
}

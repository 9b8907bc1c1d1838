import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CronExpressionParser } from 'cron-parser';
import type { Logger } from 'pino';
import { measuredDevices } from '../projects/project-settings.ts';
import {
  DuplicateError,
  type AnnotationsStore,
  type ForgeStore,
  type ProjectRecord,
  type SnapshotsStore,
  type UpdatesStore,
} from '../store/store.ts';
import type { SchedulingStore } from './store/scheduling-store.ts';
import type { UpdateQueue } from '../updates/update-queue.ts';
import type { UpdateAdmission } from '../updates/update-admission.ts';
import { sweepStuckUpdates, type StuckUpdatesStore } from '../updates/stuck-updates.ts';
import type { WebhookOutbox } from '../alerts/webhook-outbox.ts';
import { removeStalePreviews, type PreviewRetentionStore } from '../forge/preview-retention.ts';
import { removeExpiredArtifacts, type ArtifactRetention } from '../artifacts/store/artifact-retention.ts';

export interface SchedulerOptions {
  /** The lease and ticks, retention's deletes, and what the stuck-update sweep reads. */
  store: SchedulingStore &
    Pick<SnapshotsStore, 'deleteSnapshotsBefore' | 'deleteOrphans'> &
    Pick<AnnotationsStore, 'deleteAnnotationsBefore'> &
    Pick<UpdatesStore, 'deleteFinishedUpdatesBefore'> &
    Pick<ForgeStore, 'deleteForgeEventsBefore'> &
    PreviewRetentionStore &
    StuckUpdatesStore;
  queue: UpdateQueue;
  /** Scheduled updates enter their user's backlog like any other. */
  admission: UpdateAdmission;
  logger: Logger;
  /** This gateway's name in the lease. */
  holder: string;
  intervalMs: number;
  /** A holder that stops renewing loses the lease after this long; another replica takes over. */
  leaseTtlMs: number;
  /** Snapshots older than this many days are deleted, with their results and KPI records. */
  retentionDays: number;
  retentionEveryMs: number;
  /** Runs' artifacts, kept for a retention of their own (ARTIFACT_RETENTION_DAYS); absent: none are removed. */
  artifacts?: ArtifactRetention;
  /** Unfinished updates nothing will finish are looked for this often (see stuck-updates.ts). */
  stuckUpdates: { everyMs: number; graceMs: number; deadlineMs: number };
  /** Announces the updates the sweep fails, and stored snapshots whose budget events were not announced. */
  outbox?: Pick<WebhookOutbox, 'updateFailed' | 'snapshotStored'>;
  /** Sites' due ticks, started under the same lease (site-schedule.ts). */
  sites?: (at: Date) => Promise<void>;
  now?: () => Date;
}

export interface Scheduler {
  readonly leader: boolean;
  stop(): Promise<void>;
}

const LEASE = 'scheduler';
/** Far beyond the longest snapshot write (seconds), so no live writer's records are taken. */
const ORPHAN_AGE_MS = 3_600_000;

/**
 * Scheduled updates, retention and the sweep for stuck updates, run by exactly one gateway replica at a time: the holder
 * of a lease in the database (renewed every pass; a holder that dies loses it after the TTL).
 * Each pass enqueues, per project with a schedule, the latest tick that is due and not yet
 * handled: a replica taking over after missed ticks runs the latest of them once, not each.
 * A tick's update id is derived from the project and the tick, so a tick enqueued twice (a
 * holder that died between enqueueing and recording it) is stored and run once.
 */
export function startScheduler(options: SchedulerOptions): Scheduler {
  const { store, logger, holder, intervalMs, leaseTtlMs, retentionEveryMs, stuckUpdates } = options;
  const now = options.now ?? (() => new Date());
  let stopping = false;
  const wake = new AbortController();
  let leader = false;
  let lastRetention = 0;
  let lastSweep = 0;

  async function pass(): Promise<void> {
    const wasLeader = leader;
    leader = await store.acquireLease(LEASE, holder, leaseTtlMs);
    if (leader !== wasLeader) logger.info({ holder }, leader ? 'took the scheduler lease' : 'lost the scheduler lease');
    if (!leader) return;
    const at = now();
    await enqueueDueTicks(options, at);
    await options.sites?.(at);
    if (at.getTime() - lastRetention >= retentionEveryMs) {
      lastRetention = at.getTime();
      await applyRetention(options, at);
      if (options.artifacts) await removeExpiredArtifacts(options.artifacts, logger, at);
    }
    if (at.getTime() - lastSweep >= stuckUpdates.everyMs) {
      lastSweep = at.getTime();
      // The sweep reads the same store, queue, admission and outbox as the scheduler.
      await sweepStuckUpdates({ ...options, ...stuckUpdates, now });
    }
  }

  const loop = (async () => {
    while (!stopping) {
      await pass().catch((error: unknown) => {
        leader = false;
        logger.warn({ err: { message: (error as Error).message } }, 'scheduler pass failed; trying again');
      });
      await sleep(intervalMs, undefined, { signal: wake.signal }).catch(() => undefined);
    }
  })();

  return {
    get leader() {
      return leader;
    },
    async stop() {
      stopping = true;
      wake.abort();
      await loop;
    },
  };
}

/** Per project with a schedule, the latest tick due and not yet handled, enqueued and marked. */
async function enqueueDueTicks({ store, admission, logger }: SchedulerOptions, at: Date): Promise<void> {
  for (const project of await store.listScheduledProjects()) {
    const tick = latestTick(project, at);
    if (!tick || (project.scheduledThrough && tick <= project.scheduledThrough) || tick < project.createdAt) continue;
    await enqueueTick(admission, logger, project, tick);
    await store.markScheduled(project.id, tick);
  }
}

export async function enqueueTick(admission: UpdateAdmission, logger: Logger, project: ProjectRecord, tick: Date) {
  const updateId = tickUpdateId(project.id, tick);
  try {
    await admission.submit(
      {
        id: updateId,
        userId: project.userId,
        projectId: project.id,
        url: project.url,
        devices: measuredDevices(project),
        locations: project.locations,
        updateType: 'scheduled',
        runs: project.runs,
      },
      `schedule-${tick.toISOString()}`,
    );
  } catch (error) {
    // Recorded by a holder that died before it marked the tick: it is in the user's backlog
    // or the queue already; an admission it missed is made now (or by the sweep).
    if (!(error instanceof DuplicateError)) throw error;
    await admission.admitNext(project.userId);
  }
  logger.info({ updateId, tick, target: { url: project.url } }, 'scheduled update accepted');
}

/** Deletes snapshots past retention, in batches, and the records no complete snapshot owns. */
async function applyRetention({ store, logger, retentionDays }: SchedulerOptions, at: Date): Promise<void> {
  const before = new Date(at.getTime() - retentionDays * 86_400_000);
  let deleted = 0;
  for (
    let batch = await store.deleteSnapshotsBefore(before, 500);
    batch > 0;
    batch = await store.deleteSnapshotsBefore(before, 500)
  )
    deleted += batch;
  if (deleted > 0) logger.info({ deleted, before }, 'deleted snapshots past retention');
  // What else would grow without bound, kept as long as the snapshots it goes with.
  const annotations = await store.deleteAnnotationsBefore(before);
  const updates = await store.deleteFinishedUpdatesBefore(before);
  const forgeEvents = await store.deleteForgeEventsBefore(before);
  const previews = await removeStalePreviews(store, before);
  if (annotations + updates + forgeEvents + previews > 0)
    logger.info(
      { annotations, updates, forgeEvents, previews, before },
      'deleted annotations, finished update records, forge events and preview projects past retention',
    );
  // Records no complete snapshot owns, an hour old: no writer still at work owns them.
  const orphans = await store.deleteOrphans(new Date(at.getTime() - ORPHAN_AGE_MS));
  if (orphans > 0) logger.warn({ orphans }, 'deleted records of snapshots that never completed');
}

/** The latest tick of the project's (or site's) schedule at or before `at`, or null. */
export function latestTick(project: Pick<ProjectRecord, 'schedule'>, at: Date): Date | null {
  if (!project.schedule) return null;
  // prev() is strictly before currentDate: start a millisecond after `at`.
  const cron = CronExpressionParser.parse(project.schedule, { tz: 'UTC', currentDate: new Date(at.getTime() + 1) });
  return cron.hasPrev() ? cron.prev().toDate() : null;
}

/**
 * A UUID (version 5 layout) from the project and the tick: one id per tick, whoever enqueues
 * it. Written here because it is eight lines and the uuid package is not otherwise needed.
 */
export function tickUpdateId(projectId: string, tick: Date): string {
  const hex = createHash('sha1').update(`perfwatch-schedule|${projectId}|${tick.toISOString()}`).digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

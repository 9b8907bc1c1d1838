import { z } from 'zod';
import {
  DEVICES,
  LOCATIONS,
  UPDATE_TYPES,
  missingCellSchema,
  updateProgressSchema,
  type Device,
  type Location,
  type MissingCell,
  type Revision,
  type UpdateProgress,
  type UpdateType,
} from '@perfwatch/common';
import type { StoredForms } from '../../store/record-forms.ts';
import { revisionMember, storedRevision } from '../../store/stored-revision.ts';

const UPDATE_STATUSES = ['queued', 'running', 'done', 'failed'] as const;
export type UpdateStatus = (typeof UPDATE_STATUSES)[number];

export interface NewUpdate {
  id: string;
  userId: string;
  projectId: string;
  url: string;
  devices: readonly Device[];
  locations: readonly Location[];
  updateType: UpdateType;
  /** Runs per (device, location): with the cells, what the update weighs in its user's limits. */
  runs: number;
  /** The code change it measures, stored with its snapshot; absent when it was given none. */
  revision?: Revision;
}

/** A state change of an update; `reason` may also note why a `queued` update waits again. */
export type UpdateState =
  | { status: 'queued'; reason?: string }
  | { status: 'running'; reason?: string }
  | { status: 'done'; date: Date; reason?: string; missing?: MissingCell[] }
  | { status: 'failed'; reason: string };

export interface UpdateRecord {
  id: string;
  userId: string;
  projectId: string;
  url: string;
  devices: Device[];
  locations: Location[];
  updateType: UpdateType;
  status: UpdateStatus;
  /** The snapshot date, once done. */
  date: Date | null;
  reason: string | null;
  /** Deliveries that started running it. */
  attempts: number;
  /** Runs per (device, location). */
  runs: number;
  /**
   * Null while it waits in its user's backlog (see update-admission.ts); then when it was given
   * to the queue, which its deadline counts from.
   */
  admittedAt: Date | null;
  progress: UpdateProgress[];
  /** Once done: the cells it could not measure, and why. */
  missing: MissingCell[];
  createdAt: Date;
  updatedAt: Date;
  /** The code change it measures; absent when it was given none. */
  revision?: Revision;
}

/** Updates and what bounds them: each user's backlog, and the sync updates in flight (places). */
export interface UpdatesStore {
  createUpdate(update: NewUpdate): Promise<void>;
  /**
   * Records a state change. `done` is final whatever else is recorded; `failed` gives way only
   * to `done`: a delivery still running when another failed the update for good (and JetStream
   * dropped its message) must not make it `queued` again, where nothing would ever pick it up.
   */
  setUpdateState(id: string, state: UpdateState): Promise<void>;
  /** Records how far the running delivery of an update is (not once it is done). */
  setUpdateProgress(id: string, progress: readonly UpdateProgress[]): Promise<void>;
  /** An update of one of the user's projects, or null (another user's update is not found). */
  findUpdate(userId: string, id: string): Promise<UpdateRecord | null>;
  /**
   * Updates in the queue or running (not waiting in a user's backlog, which the per-user limits
   * bound) that include `location`: the back-pressure measure.
   */
  countPendingUpdates(location: Location): Promise<number>;
  /** Every update queued or running, oldest first: what an in-process queue takes up again after a restart. */
  listUnfinishedUpdates(): Promise<UpdateRecord[]>;
  /** A user's unfinished updates and the runs they hold: what the per-user limits count. */
  userBacklog(userId: string): Promise<{ updates: number; runs: number }>;
  /**
   * Gives the user's oldest updates waiting in their backlog to the queue while fewer than
   * `limit` of the user's updates are queued or running; returns the ones it admitted.
   */
  admitUpdates(userId: string, limit: number): Promise<UpdateRecord[]>;
  /** Retention: finished (done or failed) update records last changed before `before`. */
  deleteFinishedUpdatesBefore(before: Date): Promise<number>;
  /**
   * Takes one of the user's `limit` places of a kind (sync updates in flight) until now + ttlMs,
   * for every gateway replica at once; null when they are all taken. The backends keep places
   * in `slots`, the name deployed stores have (renaming it would need a data migration).
   */
  claimPlace(kind: string, userId: string, limit: number, ttlMs: number): Promise<string | null>;
  releasePlace(id: string): Promise<void>;
}

/** The statuses of an update not finished yet: what a backlog holds and the queue takes up again. */
export const UNFINISHED: readonly UpdateStatus[] = ['queued', 'running'];
/** The statuses of a finished update: what retention deletes. */
export const FINISHED: readonly UpdateStatus[] = ['done', 'failed'];

/**
 * The statuses a state change leaves as they are: `done` is final whatever else is recorded (a
 * late word from an earlier delivery, one that lost its connection while a redelivery finished
 * the update, must not undo it), and `failed` gives way to `done` only.
 */
export function statusesKeptAgainst(state: UpdateState): readonly UpdateStatus[] {
  if (state.status === 'done') return [];
  return state.status === 'failed' ? ['done'] : FINISHED;
}

/** Updates a user may still have admitted, `active` of theirs being in the queue or running. */
export const admissionRoom = (limit: number, active: number): number => Math.max(0, limit - active);

/** The runs an update of `devices` × `locations` cells holds: each cell, `runs` times. */
export const runsHeld = (devices: number, locations: number, runs: number): number => devices * locations * runs;

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function updateRecords(forms: StoredForms) {
  const { id, time, structured } = forms;
  const update = z
    .object({
      id: z.string(),
      userId: id,
      projectId: id,
      url: z.string(),
      devices: structured(z.array(z.enum(DEVICES))),
      locations: structured(z.array(z.enum(LOCATIONS))),
      updateType: z.enum(UPDATE_TYPES),
      status: z.enum(UPDATE_STATUSES),
      date: time.nullish(),
      reason: z.string().nullish(),
      attempts: z.number().int(),
      // Absent on updates of earlier versions: one run per cell.
      runs: z.number().int().positive().default(1),
      // A flag or SQLite's 0 / 1; absent on updates of earlier versions (admitted).
      waiting: z.union([z.boolean(), z.number().int()]).default(false),
      admittedAt: time.nullish(),
      progress: structured(z.array(updateProgressSchema)).default([]),
      missing: structured(z.array(missingCellSchema)).default([]),
      createdAt: time,
      updatedAt: time,
      revision: storedRevision(forms),
    })
    // An update of an earlier version, which had no backlog, was admitted when it was created.
    .transform(({ date, reason, waiting, admittedAt, revision, ...rest }): UpdateRecord => ({
      ...rest,
      date: date ?? null,
      reason: reason ?? null,
      admittedAt: waiting ? null : (admittedAt ?? rest.createdAt),
      ...revisionMember(revision),
    }));
  return { update };
}

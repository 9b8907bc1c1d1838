import { ObjectId, type Collection, type Db } from 'mongodb';
import type { Location, MissingCell, Revision, UpdateProgress } from '@perfwatch/common';
import { asRecord, duplicateOr, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  admissionRoom,
  FINISHED,
  runsHeld,
  statusesKeptAgainst,
  UNFINISHED,
  updateRecords,
  type NewUpdate,
  type UpdateRecord,
  type UpdateState,
  type UpdatesStore,
} from './updates-store.ts';

const updateDoc = asRecord(updateRecords(mongoForms).update);

/** What the updates collection holds; read back through updateDoc. */
interface UpdateDocument {
  // Keyed by the update id the API hands out (a UUID string), not an ObjectId.
  _id: string;
  userId: ObjectId;
  projectId: ObjectId;
  url: string;
  devices: string[];
  locations: string[];
  updateType: string;
  status: string;
  date?: Date;
  reason?: string;
  attempts: number;
  /** Absent on updates of earlier versions: one run per cell. */
  runs?: number;
  /** True while the update waits in its user's backlog; absent on updates of earlier versions (admitted). */
  waiting?: boolean;
  admittedAt?: Date;
  progress?: UpdateProgress[];
  missing?: MissingCell[];
  createdAt: Date;
  updatedAt: Date;
  /** The code change it measures; absent when it was given none (and on updates of earlier versions). */
  revision?: Revision;
}
type PlaceDocument = { _id: string; kind: string; userId: string; expiresAt: Date };

export const updateIndexes = (db: Db) => {
  const updates = db.collection('updates');
  return [
    updates.createIndex({ userId: 1, _id: 1 }),
    updates.createIndex({ status: 1, locations: 1 }),
    // A user's backlog, oldest first.
    updates.createIndex({ userId: 1, status: 1, createdAt: 1 }),
    db.collection('slots').createIndex({ kind: 1, userId: 1 }),
  ];
};

const unfinished = { status: { $in: [...UNFINISHED] } };
/** Unfinished and given to the queue: not waiting in the user's backlog. */
const admitted = { ...unfinished, waiting: { $ne: true } };

/** Updates in MongoDB (the `updates` collection) and the places of sync updates in flight (the
 * `slots` collection: deployed stores have it by that name). */
export class MongoUpdates implements UpdatesStore {
  readonly #base: MongoDatabase;
  readonly #updates: Collection<UpdateDocument>;
  readonly #places: Collection<PlaceDocument>;
  #lastCreatedAt = 0;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#updates = base.db.collection<UpdateDocument>('updates');
    this.#places = base.db.collection<PlaceDocument>('slots');
  }

  async createUpdate(update: NewUpdate): Promise<void> {
    // Strictly increasing per gateway, so a user's backlog (ordered by creation) keeps the order
    // its updates arrived in even when several arrive in one millisecond.
    const now = new Date(Math.max(Date.now(), this.#lastCreatedAt + 1));
    this.#lastCreatedAt = now.getTime();
    try {
      await this.#updates.insertOne({
        _id: update.id,
        userId: new ObjectId(update.userId),
        projectId: new ObjectId(update.projectId),
        url: update.url,
        devices: [...update.devices],
        locations: [...update.locations],
        updateType: update.updateType,
        status: 'queued',
        attempts: 0,
        runs: update.runs,
        waiting: true,
        createdAt: now,
        updatedAt: now,
        ...(update.revision ? { revision: { ...update.revision } } : {}),
      });
    } catch (error) {
      throw duplicateOr(error, `update ${update.id} exists`);
    }
  }

  async setUpdateState(id: string, state: UpdateState): Promise<void> {
    const set: Partial<UpdateDocument> = { status: state.status, updatedAt: new Date() };
    if (state.status === 'done') {
      set.date = state.date;
      set.missing = (state.missing ?? []).map((m) => ({ ...m }));
    }
    if (state.reason !== undefined) set.reason = state.reason;
    const kept = statusesKeptAgainst(state);
    await this.#updates.updateOne(kept.length === 0 ? { _id: id } : { _id: id, status: { $nin: [...kept] } }, {
      $set: set,
      ...(state.status === 'running' ? { $inc: { attempts: 1 } } : {}),
    });
  }

  async setUpdateProgress(id: string, progress: readonly UpdateProgress[]): Promise<void> {
    await this.#updates.updateOne(
      { _id: id, status: { $ne: 'done' } },
      { $set: { progress: progress.map((p) => ({ ...p })), updatedAt: new Date() } },
    );
  }

  async findUpdate(userId: string, id: string): Promise<UpdateRecord | null> {
    const doc = await this.#updates.findOne({ _id: id, userId: new ObjectId(userId) });
    return doc ? updateDoc.parse(doc) : null;
  }

  async countPendingUpdates(location: Location): Promise<number> {
    return this.#updates.countDocuments({ ...admitted, locations: location });
  }

  async listUnfinishedUpdates(): Promise<UpdateRecord[]> {
    const docs = await this.#updates.find(unfinished).sort({ createdAt: 1 }).toArray();
    return this.#base.unreadable.parseEach('update', updateDoc, docs);
  }

  async userBacklog(userId: string): Promise<{ updates: number; runs: number }> {
    // Bounded by the per-user limits themselves: summed here rather than with $group, which
    // not every MongoDB-wire server implements alike.
    const docs = await this.#updates
      .find({ userId: new ObjectId(userId), ...unfinished }, { projection: { devices: 1, locations: 1, runs: 1 } })
      .toArray();
    return {
      updates: docs.length,
      runs: docs.reduce((sum, d) => sum + runsHeld(d.devices.length, d.locations.length, d.runs ?? 1), 0),
    };
  }

  async admitUpdates(userId: string, limit: number): Promise<UpdateRecord[]> {
    const user = new ObjectId(userId);
    const room = admissionRoom(limit, await this.#updates.countDocuments({ userId: user, ...admitted }));
    if (room === 0) return [];
    const next = await this.#updates
      .find({ userId: user, status: 'queued', waiting: true })
      .sort({ createdAt: 1, _id: 1 })
      .limit(room)
      .toArray();
    const taken: UpdateRecord[] = [];
    for (const doc of next) {
      const now = new Date();
      // Conditional: of two gateways admitting at once, each update goes to one of them.
      const { modifiedCount } = await this.#updates.updateOne(
        { _id: doc._id, waiting: true },
        { $set: { waiting: false, admittedAt: now, updatedAt: now } },
      );
      if (modifiedCount === 1) taken.push(updateDoc.parse({ ...doc, waiting: false, admittedAt: now, updatedAt: now }));
    }
    return taken;
  }

  async deleteFinishedUpdatesBefore(before: Date): Promise<number> {
    const { deletedCount } = await this.#updates.deleteMany({
      status: { $in: [...FINISHED] },
      updatedAt: { $lt: before },
    });
    return deletedCount;
  }

  async claimPlace(kind: string, userId: string, limit: number, ttlMs: number): Promise<string | null> {
    const now = new Date();
    const id = new ObjectId().toHexString();
    await this.#places.deleteMany({ expiresAt: { $lt: now } });
    await this.#places.insertOne({ _id: id, kind, userId, expiresAt: new Date(now.getTime() + ttlMs) });
    // Taken first, counted after: two gateways claiming the last place at once both see two and
    // both give theirs back, rather than both going over the limit.
    const taken = await this.#places.countDocuments({ kind, userId, expiresAt: { $gte: now } });
    if (taken <= limit) return id;
    await this.#places.deleteOne({ _id: id });
    return null;
  }

  async releasePlace(id: string): Promise<void> {
    await this.#places.deleteOne({ _id: id });
  }
}

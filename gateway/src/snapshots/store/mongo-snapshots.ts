import { ObjectId, type Collection, type Db } from 'mongodb';
import pLimit, { type LimitFunction } from 'p-limit';
import pRetry from 'p-retry';
import { z } from 'zod';
import type { MissingCell } from '@perfwatch/common';
import {
  asRecord,
  isDuplicateKey,
  isTransientStoreError,
  mongoForms,
  objectId,
  type MongoDatabase,
} from '../../store/mongo-database.ts';
import { NoFreeSnapshotDate, snapshotDates } from '../../store/snapshot-dates.ts';
import { revisionMember } from '../../store/stored-revision.ts';
import { placedKpis } from './kpis-store.ts';
import { kpiDocs } from './mongo-kpis.ts';
import { resultDocument } from './mongo-result-docs.ts';
import {
  announcesEvents,
  availableCells,
  ConcurrentWrite,
  snapshotRecords,
  type NewSnapshot,
  type SnapshotsStore,
  type UnannouncedSnapshot,
} from './snapshots-store.ts';

const records = snapshotRecords(mongoForms);
const snapshotDoc = asRecord(records.snapshot);
const snapshotStateDoc = z.object({ status: z.enum(['writing', 'complete']), date: z.date() });
const unannouncedDoc = z
  .object({ projectId: objectId, userId: objectId, url: z.string(), updateId: z.string(), date: z.date() })
  .extend({ alertsPendingSince: z.date() })
  .transform(({ alertsPendingSince, ...rest }): UnannouncedSnapshot => ({ ...rest, storedAt: alertsPendingSince }));

export const snapshotIndexes = (db: Db) => {
  const snapshots = db.collection('snapshots');
  return [
    // /v1/audit reads a project's snapshot at one second.
    snapshots.createIndex({ projectId: 1, date: 1 }, { unique: true }),
    // One snapshot per update, however often its job is delivered.
    snapshots.createIndex({ updateId: 1 }, { unique: true }),
    db.collection('results').createIndex({ snapshotId: 1, device: 1, location: 1 }),
    // Retention deletes by age.
    snapshots.createIndex({ date: 1 }),
    // The sweep for snapshots whose budget events did not reach the outbox.
    snapshots.createIndex({ alertsPendingSince: 1 }),
  ];
};

export interface MongoSnapshotsOptions {
  /** Tries of a snapshot save after a transient failure (backing off to 4 s: about 20 s in all). */
  saveRetries?: number;
  /**
   * Snapshot saves at once. A thousand updates ending together would otherwise write at once:
   * an SQLite-backed server (FerretDB) then answers most writes "database is locked", and every
   * retry of a save begins by clearing what the failed one wrote. Eight keep MongoDB busy too.
   */
  concurrentSaves?: number;
}

/**
 * Snapshots in MongoDB (`snapshots`, their cells in `results`, their KPI records in `kpis`).
 * Stays within what MongoDB-wire servers without transactions support (FerretDB in tests): a
 * snapshot is written as `writing`, its results and KPI records next, and only then marked
 * `complete`; reads see complete snapshots only.
 */
export class MongoSnapshots implements SnapshotsStore {
  readonly #snapshots: Collection;
  readonly #results: Collection;
  readonly #kpis: Collection;
  readonly #saveRetries: number;
  readonly #saves: LimitFunction;

  constructor(base: MongoDatabase, { saveRetries = 8, concurrentSaves = 8 }: MongoSnapshotsOptions = {}) {
    this.#snapshots = base.db.collection('snapshots');
    this.#results = base.db.collection('results');
    this.#kpis = base.db.collection('kpis');
    this.#saveRetries = saveRetries;
    this.#saves = pLimit(concurrentSaves);
  }

  /**
   * A snapshot is what minutes of Lighthouse runs produced: a database that is away for a few
   * seconds (a restart, a failover) or busy with other writers is waited for rather than
   * losing them. Safe to repeat because a save is idempotent per update.
   */
  async saveSnapshot(snapshot: NewSnapshot): Promise<Date> {
    return this.#saves(() =>
      pRetry(() => this.#saveSnapshotOnce(snapshot), {
        retries: this.#saveRetries,
        minTimeout: 250,
        maxTimeout: 4_000,
        factor: 2,
        shouldRetry: ({ error }) => isTransientStoreError(error),
      }),
    );
  }

  async #saveSnapshotOnce(snapshot: NewSnapshot): Promise<Date> {
    const { updateId } = snapshot;
    // Idempotent per update: a redelivered job finds the snapshot its first delivery wrote, or
    // takes over what an earlier writer left `writing` and writes it again. Never two snapshots
    // for one update, and never a record of a snapshot that is not complete in the overview:
    // KPI records are written `pending` and shown once their snapshot is complete.
    const earlier = await this.#snapshots.findOne({ updateId });
    if (earlier) {
      const { status, date: storedAt } = snapshotStateDoc.parse(earlier);
      if (status === 'complete') return this.#released(earlier._id as ObjectId, storedAt);
      const taken = await this.#takeOver(earlier._id as ObjectId, updateId);
      if (taken) return taken;
    }
    const snapshotId = new ObjectId();
    const stored = await this.#insertWriting(snapshotId, snapshot);
    await this.#insertCells(snapshotId, stored, snapshot);
    // The fence: completing needs this writer's document still `writing`. A redelivery that took
    // over removed it; this writer then removes what it wrote and steps back. No transactions
    // here (FerretDB v1): the snapshot's events are owed in the same one-document write that
    // completes it, and the outbox write that follows settles them (listUnannouncedSnapshots).
    const owed = announcesEvents(snapshot.results) ? { alertsPendingSince: new Date() } : {};
    const completed = await this.#snapshots.updateOne(
      { _id: snapshotId, status: 'writing' },
      { $set: { status: 'complete', ...owed } },
    );
    if (completed.matchedCount === 0) {
      await this.#discard(snapshotId);
      throw new ConcurrentWrite(updateId);
    }
    return this.#released(snapshotId, stored);
  }

  /**
   * The snapshot's document, `writing`, at the first of its dates (snapshotDates) its project
   * has no snapshot at; the date it took. ConcurrentWrite when another delivery of the update
   * is writing it right now (the unique key on updateId).
   */
  async #insertWriting(
    snapshotId: ObjectId,
    { project, updateId, date, updateType, results, missing, kpiVersion = 1, revision }: NewSnapshot,
  ): Promise<Date> {
    const available = availableCells(results);
    for (const candidate of snapshotDates(date)) {
      try {
        await this.#snapshots.insertOne({
          _id: snapshotId,
          projectId: new ObjectId(project.id),
          userId: new ObjectId(project.userId),
          updateId,
          url: project.url,
          domain: project.domain,
          date: candidate,
          updateType,
          available,
          missing: (missing ?? []).map((m) => ({ ...m })),
          kpiVersion,
          ...revisionMember(revision),
          status: 'writing',
          createdAt: new Date(),
        });
        return candidate;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        if (await this.#snapshots.findOne({ updateId }, { projection: { _id: 1 } }))
          throw new ConcurrentWrite(updateId);
      }
    }
    throw new NoFreeSnapshotDate(project.url, date);
  }

  /** The snapshot's results and its KPI records, the records `pending` until the snapshot is complete. */
  async #insertCells(
    snapshotId: ObjectId,
    stored: Date,
    { project, updateType, results, revision }: Pick<NewSnapshot, 'project' | 'updateType' | 'results' | 'revision'>,
  ): Promise<void> {
    const projectId = new ObjectId(project.id);
    const resultDocs = await Promise.all(
      results.map((r) => resultDocument(r, { snapshotId, projectId, date: stored })),
    );
    if (resultDocs.length > 0) await this.#results.insertMany(resultDocs, { ordered: false });
    const { id, userId, domain, url } = project;
    const place = { projectId: id, userId, date: stored, domain, url, updateType, ...revisionMember(revision) };
    const kpiDocuments = kpiDocs(
      placedKpis({ snapshotId: snapshotId.toHexString(), ...place }, results),
      snapshotId,
      true,
    );
    if (kpiDocuments.length > 0) await this.#kpis.insertMany(kpiDocuments, { ordered: false });
  }

  /** Shows a complete snapshot's KPI records in the overview (again, after a writer died between the two steps). */
  async #released(snapshotId: ObjectId, date: Date): Promise<Date> {
    await this.#kpis.updateMany({ snapshotId, pending: true }, { $unset: { pending: '' } });
    return date;
  }

  /**
   * Takes over a snapshot another delivery left `writing`: its document goes first, so that
   * writer, if alive, can no longer complete it; then its records. Returns the date when the
   * snapshot turned out complete after all.
   */
  async #takeOver(snapshotId: ObjectId, updateId: string): Promise<Date | null> {
    const removed = await this.#snapshots.deleteOne({ _id: snapshotId, status: 'writing' });
    if (removed.deletedCount === 0) {
      const now = await this.#snapshots.findOne({ updateId });
      if (now) {
        const { status, date } = snapshotStateDoc.parse(now);
        if (status === 'complete') return this.#released(now._id as ObjectId, date);
        throw new ConcurrentWrite(updateId);
      }
    }
    await this.#kpis.deleteMany({ snapshotId });
    await this.#results.deleteMany({ snapshotId });
    return null;
  }

  /** KPI records and results first: a deletion cut short leaves a snapshot to find next time. */
  async #discard(snapshotId: ObjectId): Promise<void> {
    await this.#kpis.deleteMany({ snapshotId });
    await this.#results.deleteMany({ snapshotId });
    await this.#snapshots.deleteOne({ _id: snapshotId });
  }

  async listUnannouncedSnapshots(storedBefore: Date, limit: number): Promise<UnannouncedSnapshot[]> {
    const docs = await this.#snapshots
      .find(
        { status: 'complete', alertsPendingSince: { $lte: storedBefore } },
        { projection: { projectId: 1, userId: 1, url: 1, updateId: 1, date: 1, alertsPendingSince: 1 } },
      )
      .sort({ alertsPendingSince: 1 })
      .limit(limit)
      .toArray();
    return docs.map((doc) => unannouncedDoc.parse(doc));
  }

  async markSnapshotAnnounced(updateId: string): Promise<void> {
    await this.#snapshots.updateOne({ updateId }, { $unset: { alertsPendingSince: '' } });
  }

  async deleteSnapshotsBefore(before: Date, limit: number): Promise<number> {
    const old = await this.#snapshots
      .find({ date: { $lt: before } }, { projection: { _id: 1 } })
      .limit(limit)
      .toArray();
    for (const { _id } of old) await this.#discard(_id as ObjectId);
    return old.length;
  }

  async deleteOrphans(olderThan: Date): Promise<number> {
    // Records of snapshots that are not complete (a writer that died or stepped back, or one of
    // an earlier version cut short), old enough that no live writer owns them.
    const old = { _id: { $lt: ObjectId.createFromTime(Math.floor(olderThan.getTime() / 1000)) } };
    let deleted = 0;
    for (const collection of [this.#kpis, this.#results]) {
      const ids = (await collection.distinct('snapshotId', old)) as ObjectId[];
      for (let i = 0; i < ids.length; i += 500) {
        const chunk = ids.slice(i, i + 500);
        const complete = new Set(
          (
            await this.#snapshots
              .find({ _id: { $in: chunk }, status: 'complete' }, { projection: { _id: 1 } })
              .toArray()
          ).map((d) => String(d._id)),
        );
        // Field-data history hangs on a string id of its project, never on a snapshot.
        const orphaned = chunk.filter((id) => id instanceof ObjectId && !complete.has(String(id)));
        if (orphaned.length > 0)
          deleted += (await collection.deleteMany({ snapshotId: { $in: orphaned }, ...old })).deletedCount;
      }
    }
    return deleted;
  }

  async findSnapshotOfUpdate(updateId: string): Promise<{ date: Date; missing: MissingCell[] } | null> {
    const raw = await this.#snapshots.findOne({ updateId, status: 'complete' });
    if (!raw) return null;
    const { date, missing } = snapshotDoc.parse(raw);
    // The delivery that wrote it may have died before it showed its KPI records.
    await this.#released(raw._id as ObjectId, date);
    return { date, missing };
  }
}

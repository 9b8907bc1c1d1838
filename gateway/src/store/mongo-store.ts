import {
  Binary,
  MongoClient,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  ObjectId,
  type Collection,
  type Db,
} from 'mongodb';
import pLimit, { type LimitFunction } from 'p-limit';
import pRetry from 'p-retry';
import { z } from 'zod';
import { type Budgets, type Device, type KpiRecord, type Location } from '@perfwatch/common';
import { cellReadLater, recordSchemas, storedCell } from './record-schemas.ts';
import { UnreadableRecords } from './unreadable-records.ts';
import { NoFreeSnapshotDate, snapshotDates } from './snapshot-dates.ts';
import {
  announcesEvents,
  ConcurrentWrite,
  DuplicateError,
  fieldHistoryId,
  KPI_BATCH,
  kpiBatches,
  WebhookLimitReached,
} from './store.ts';
// The store contract's types, by their module's name: both stores implement the same one.
import type * as contract from './store.ts';

/** The fields of a KPI document the overview reads, and the order it reads them in (its index's). */
export const KPI_PROJECTION = {
  _id: 0,
  date: 1,
  domain: 1,
  url: 1,
  device: 1,
  location: 1,
  updateType: 1,
  section: 1,
  kpi: 1,
  data: 1,
} as const;
export const KPI_ORDER = { date: 1, url: 1, device: 1, location: 1, section: 1, kpi: 1 } as const;

const DUPLICATE_KEY = 11000;
/** MongoDB aborts one of two writes to the same document with this code; the write may simply be tried again. */
const WRITE_CONFLICT = 112;

const objectId = z.instanceof(ObjectId).transform((id) => id.toHexString());
// Arrays and objects are the document's own: read as they are.
const records = recordSchemas({
  id: objectId,
  time: z.date(),
  structured: <T extends z.ZodType>(schema: T) => schema as z.ZodType<z.output<T>>,
});
/** A document read as its record: its `_id` is the record's id. */
const asRecord = <T extends z.ZodType>(schema: T) =>
  z.preprocess((doc) => {
    const { _id, ...rest } = doc as Record<string, unknown>;
    return { ...rest, id: _id };
  }, schema);
const userDoc = asRecord(records.user);
const tokenDoc = records.token;
const projectDoc = asRecord(records.project);
const webhookDoc = asRecord(records.webhook);
const deliveryDoc = asRecord(records.delivery);
const annotationDoc = asRecord(records.annotation);
const snapshotDoc = asRecord(records.snapshot);
// A scheduler's mark that cannot be read is no mark: the project is simply due.
const scheduledProjectDoc = projectDoc.and(
  z.object({ scheduledThrough: z.date().nullable().catch(null).default(null) }),
);
const updateDoc = asRecord(records.update);
const summaryDoc = records.snapshot.pick({ date: true, updateType: true, available: true });
const resultDoc = records.result.extend({ lighthouse: z.instanceof(Binary) });
/** What the updates collection holds; read back through updateDoc. */
interface UpdateDocument {
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
  progress?: contract.UpdateProgress[];
  missing?: contract.MissingCell[];
  createdAt: Date;
  updatedAt: Date;
}
/** What the deliveries collection holds; read back through deliveryDoc. */
interface DeliveryDocument {
  _id: string;
  webhookId: ObjectId;
  userId: ObjectId;
  event: string;
  body: string;
  status: string;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
}
const snapshotStateDoc = z.object({ status: z.enum(['writing', 'complete']), date: z.date() });
const unannouncedDoc = z
  .object({
    projectId: objectId,
    userId: objectId,
    url: z.string(),
    updateId: z.string(),
    date: z.date(),
    alertsPendingSince: z.date(),
  })
  .transform(({ alertsPendingSince, ...rest }): contract.UnannouncedSnapshot => ({
    ...rest,
    storedAt: alertsPendingSince,
  }));
const kpiDoc = records.kpi.extend({ data: z.union([z.record(z.string(), z.unknown()), z.string()]) });

export interface MongoStoreOptions {
  uri: string;
  dbName: string;
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
 * A failure the same write may not meet again: the server could not be reached (refused,
 * reset, not selected in time), MongoDB says so itself (RetryableWriteError label, a write
 * conflict), or an SQLite-backed server (FerretDB) found its database locked by another writer.
 */
export function isTransientStoreError(error: unknown): boolean {
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true;
  if (!(error instanceof MongoServerError)) return false;
  return (
    error.hasErrorLabel('RetryableWriteError') ||
    error.code === WRITE_CONFLICT ||
    /SQLITE_BUSY|database is locked/.test(error.message)
  );
}

/**
 * The MongoDB store. Stays within what MongoDB-wire servers without transactions support
 * (FerretDB in tests): a snapshot is written as `writing`, its results and KPI records next,
 * and only then marked `complete`; reads see complete snapshots only.
 */
export class MongoStore implements contract.Store {
  readonly #client: MongoClient;
  readonly #db: Db;
  readonly #users: Collection;
  readonly #tokens: Collection;
  readonly #projects: Collection;
  readonly #snapshots: Collection;
  readonly #results: Collection;
  readonly #kpis: Collection;
  // Keyed by the update id the API hands out (a UUID string), not an ObjectId.
  readonly #updates: Collection<UpdateDocument>;
  readonly #leases: Collection<{ _id: string; holder: string; expiresAt: Date }>;
  readonly #slots: Collection<{ _id: string; kind: string; userId: string; expiresAt: Date }>;
  readonly #notes: Collection<{ _id: string; value: string }>;
  readonly #webhooks: Collection;
  // Keyed by the delivery id derived from its event, so announcing an event twice stores it once.
  readonly #deliveries: Collection<DeliveryDocument>;
  readonly #annotations: Collection;

  /** The database this store uses (tests and tools read it directly). */
  readonly dbName: string;
  readonly unreadable = new UnreadableRecords();

  readonly #saveRetries: number;
  #lastCreatedAt = 0;
  readonly #saves: LimitFunction;

  constructor({ uri, dbName, saveRetries = 8, concurrentSaves = 8 }: MongoStoreOptions) {
    this.dbName = dbName;
    this.#saveRetries = saveRetries;
    this.#saves = pLimit(concurrentSaves);
    this.#client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000, appName: 'perfwatch' });
    this.#db = this.#client.db(dbName);
    this.#users = this.#db.collection('users');
    this.#tokens = this.#db.collection('tokens');
    this.#projects = this.#db.collection('projects');
    this.#snapshots = this.#db.collection('snapshots');
    this.#results = this.#db.collection('results');
    this.#kpis = this.#db.collection('kpis');
    this.#updates = this.#db.collection<UpdateDocument>('updates');
    this.#leases = this.#db.collection<{ _id: string; holder: string; expiresAt: Date }>('leases');
    this.#slots = this.#db.collection<{ _id: string; kind: string; userId: string; expiresAt: Date }>('slots');
    this.#notes = this.#db.collection<{ _id: string; value: string }>('notes');
    this.#webhooks = this.#db.collection('webhooks');
    this.#deliveries = this.#db.collection<DeliveryDocument>('deliveries');
    this.#annotations = this.#db.collection('annotations');
  }

  async init(): Promise<void> {
    await this.#client.connect();
    await Promise.all([
      this.#users.createIndex({ name: 1 }, { unique: true }),
      this.#tokens.createIndex({ prefix: 1 }, { unique: true }),
      this.#projects.createIndex({ userId: 1, url: 1 }, { unique: true }),
      // /v1/audit reads a project's snapshot at one second.
      this.#snapshots.createIndex({ projectId: 1, date: 1 }, { unique: true }),
      // One snapshot per update, however often its job is delivered.
      this.#snapshots.createIndex({ updateId: 1 }, { unique: true }),
      this.#updates.createIndex({ userId: 1, _id: 1 }),
      this.#updates.createIndex({ status: 1, locations: 1 }),
      // A user's backlog, oldest first.
      this.#updates.createIndex({ userId: 1, status: 1, createdAt: 1 }),
      this.#slots.createIndex({ kind: 1, userId: 1 }),
      this.#results.createIndex({ snapshotId: 1, device: 1, location: 1 }),
      // /v1/overview reads a user's KPI records by date range, in KPI_ORDER (same keys, same index name as before).
      this.#kpis.createIndex({ userId: 1, ...KPI_ORDER }),
      this.#kpis.createIndex({ snapshotId: 1 }),
      // Retention deletes by age.
      this.#snapshots.createIndex({ date: 1 }),
      // The sweep for snapshots whose budget events did not reach the outbox.
      this.#snapshots.createIndex({ alertsPendingSince: 1 }),
      this.#webhooks.createIndex({ userId: 1, createdAt: 1 }),
      // The sender's due deliveries, and a webhook's newest.
      this.#deliveries.createIndex({ status: 1, nextAttemptAt: 1 }),
      this.#deliveries.createIndex({ webhookId: 1, createdAt: -1 }),
      // Finished deliveries are pruned by age.
      this.#deliveries.createIndex({ createdAt: 1 }),
      this.#annotations.createIndex({ projectId: 1, date: 1 }),
    ]);
  }

  async close(): Promise<void> {
    await this.#client.close();
  }

  async ping(): Promise<void> {
    await this.#db.command({ ping: 1 });
  }

  async createUser(name: string): Promise<contract.UserRecord> {
    const doc = { _id: new ObjectId(), name, createdAt: new Date() };
    try {
      await this.#users.insertOne(doc);
    } catch (error) {
      throw duplicateOr(error, `user ${JSON.stringify(name)} exists`);
    }
    return userDoc.parse(doc);
  }

  async findUserByName(name: string): Promise<contract.UserRecord | null> {
    const doc = await this.#users.findOne({ name });
    return doc ? userDoc.parse(doc) : null;
  }

  async listUsers(): Promise<contract.UserRecord[]> {
    const docs = await this.#users.find({}).sort({ name: 1 }).toArray();
    return this.unreadable.parseEach('user', userDoc, docs);
  }

  async addToken({ prefix, userId, digest, expiresAt }: contract.NewToken): Promise<void> {
    try {
      await this.#tokens.insertOne({
        prefix,
        userId: new ObjectId(userId),
        digest,
        createdAt: new Date(),
        revokedAt: null,
        expiresAt: expiresAt ?? null,
      });
    } catch (error) {
      throw duplicateOr(error, `token prefix ${prefix} exists`);
    }
  }

  async findToken(prefix: string): Promise<contract.TokenRecord | null> {
    const doc = await this.#tokens.findOne({ prefix });
    return doc ? tokenDoc.parse(doc) : null;
  }

  async listTokens(userId: string): Promise<contract.TokenRecord[]> {
    const docs = await this.#tokens
      .find({ userId: new ObjectId(userId) })
      .sort({ createdAt: 1, prefix: 1 })
      .toArray();
    return this.unreadable.parseEach('token', tokenDoc, docs);
  }

  async revokeToken(prefix: string): Promise<boolean> {
    const result = await this.#tokens.updateOne({ prefix, revokedAt: null }, { $set: { revokedAt: new Date() } });
    return result.modifiedCount === 1;
  }

  async addProject(project: contract.NewProject): Promise<contract.ProjectRecord> {
    const doc = {
      _id: new ObjectId(),
      ...project,
      budgets: project.budgets ?? { budgets: {}, maxRegression: {} },
      auth: project.auth ?? null,
      userId: new ObjectId(project.userId),
      createdAt: new Date(),
    };
    try {
      await this.#projects.insertOne(doc);
    } catch (error) {
      throw duplicateOr(error, `project ${project.url} exists for this user`);
    }
    return projectDoc.parse(doc);
  }

  async findProject(userId: string, url: string): Promise<contract.ProjectRecord | null> {
    const doc = await this.#projects.findOne({ userId: new ObjectId(userId), url });
    return doc ? projectDoc.parse(doc) : null;
  }

  async listProjects(userId?: string): Promise<contract.ProjectRecord[]> {
    const docs = await this.#projects
      .find(userId ? { userId: new ObjectId(userId) } : {})
      .sort({ url: 1 })
      .toArray();
    return this.unreadable.parseEach('project', projectDoc, docs);
  }

  async removeProject(userId: string, url: string): Promise<boolean> {
    const doc = await this.#projects.findOne({ userId: new ObjectId(userId), url });
    if (!doc) return false;
    // Data first, the project last: a removal cut short can simply be run again.
    await this.#kpis.deleteMany({ projectId: doc._id });
    await this.#results.deleteMany({ projectId: doc._id });
    await this.#snapshots.deleteMany({ projectId: doc._id });
    await this.#annotations.deleteMany({ projectId: doc._id });
    await this.#projects.deleteOne({ _id: doc._id });
    return true;
  }

  async setProjectBudgets(projectId: string, budgets: Budgets): Promise<void> {
    await this.#projects.updateOne({ _id: new ObjectId(projectId) }, { $set: { budgets } });
  }

  async setProjectAuth(projectId: string, sealed: string | null): Promise<void> {
    await this.#projects.updateOne({ _id: new ObjectId(projectId) }, { $set: { auth: sealed } });
  }

  async replaceProjectAuth(projectId: string, expected: string, sealed: string): Promise<boolean> {
    const result = await this.#projects.updateOne(
      { _id: new ObjectId(projectId), auth: expected },
      { $set: { auth: sealed } },
    );
    return result.matchedCount === 1;
  }

  async addWebhook(webhook: contract.NewWebhook, maxPerUser = Infinity): Promise<contract.WebhookRecord> {
    const doc = { _id: new ObjectId(), ...webhook, userId: new ObjectId(webhook.userId), createdAt: new Date() };
    await this.#webhooks.insertOne(doc);
    // Counted after the insert, so two adds at once both see each other (no transaction needed
    // on any MongoDB-wire server): past the limit, this one is taken back.
    if (Number.isFinite(maxPerUser) && (await this.#webhooks.countDocuments({ userId: doc.userId })) > maxPerUser) {
      await this.#webhooks.deleteOne({ _id: doc._id });
      await this.#deliveries.deleteMany({ webhookId: doc._id });
      throw new WebhookLimitReached(maxPerUser);
    }
    return webhookDoc.parse(doc);
  }

  async findWebhook(id: string): Promise<contract.WebhookRecord | null> {
    if (!ObjectId.isValid(id)) return null;
    const doc = await this.#webhooks.findOne({ _id: new ObjectId(id) });
    return doc ? webhookDoc.parse(doc) : null;
  }

  async setWebhookSecret(id: string, secret: string): Promise<void> {
    await this.#webhooks.updateOne({ _id: new ObjectId(id) }, { $set: { secret } });
  }

  async listWebhooks(userId: string): Promise<contract.WebhookRecord[]> {
    const docs = await this.#webhooks
      .find({ userId: new ObjectId(userId) })
      .sort({ createdAt: 1, _id: 1 })
      .toArray();
    return this.unreadable.parseEach('webhook', webhookDoc, docs);
  }

  async removeWebhook(userId: string, id: string): Promise<boolean> {
    if (!ObjectId.isValid(id)) return false;
    const removed = await this.#webhooks.deleteOne({ _id: new ObjectId(id), userId: new ObjectId(userId) });
    if (removed.deletedCount === 0) return false;
    await this.#deliveries.deleteMany({ webhookId: new ObjectId(id) });
    return true;
  }

  async enqueueDeliveries(deliveries: readonly contract.NewDelivery[]): Promise<void> {
    // An upsert that only ever inserts: a delivery already in the outbox keeps its state.
    for (const d of deliveries) {
      await this.#deliveries.updateOne(
        { _id: d.id },
        {
          $setOnInsert: {
            webhookId: new ObjectId(d.webhookId),
            userId: new ObjectId(d.userId),
            event: d.event,
            body: d.body,
            status: 'pending',
            attempts: 0,
            nextAttemptAt: d.createdAt,
            lastError: null,
            createdAt: d.createdAt,
            deliveredAt: null,
          },
        },
        { upsert: true },
      );
    }
  }

  async claimDeliveries(
    now: Date,
    limit: number,
    leaseMs: number,
    exceptUsers: readonly string[] = [],
  ): Promise<contract.DeliveryRecord[]> {
    // One at a time with findOneAndUpdate: each claim is atomic on any MongoDB-wire server, so
    // two gateways never take the same delivery in the same lease.
    const claimed: contract.DeliveryRecord[] = [];
    const others = exceptUsers.length > 0 ? { userId: { $nin: exceptUsers.map((id) => new ObjectId(id)) } } : {};
    while (claimed.length < limit) {
      const doc = await this.#deliveries.findOneAndUpdate(
        { status: 'pending', nextAttemptAt: { $lte: now }, ...others },
        { $set: { nextAttemptAt: new Date(now.getTime() + leaseMs) } },
        { sort: { nextAttemptAt: 1 }, returnDocument: 'after' },
      );
      if (!doc) break;
      claimed.push(deliveryDoc.parse(doc));
    }
    return claimed;
  }

  async recordDeliveryAttempt(id: string, attempt: contract.DeliveryAttempt): Promise<void> {
    const set =
      attempt.status === 'delivered'
        ? { status: 'delivered', deliveredAt: attempt.at, lastError: null }
        : attempt.status === 'pending'
          ? { nextAttemptAt: attempt.nextAttemptAt, lastError: attempt.error }
          : { status: 'failed', lastError: attempt.error };
    await this.#deliveries.updateOne({ _id: id }, { $set: set, $inc: { attempts: 1 } });
  }

  async listDeliveries(webhookId: string, limit: number): Promise<contract.DeliveryRecord[]> {
    const docs = await this.#deliveries
      .find({ webhookId: new ObjectId(webhookId) })
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit)
      .toArray();
    return this.unreadable.parseEach('delivery', deliveryDoc, docs);
  }

  async deleteDeliveriesBefore(before: Date): Promise<number> {
    const { deletedCount } = await this.#deliveries.deleteMany({
      status: { $ne: 'pending' },
      createdAt: { $lt: before },
    });
    return deletedCount;
  }

  async addAnnotation(annotation: contract.NewAnnotation): Promise<contract.AnnotationRecord> {
    const doc = {
      _id: new ObjectId(),
      ...annotation,
      projectId: new ObjectId(annotation.projectId),
      createdAt: new Date(),
    };
    await this.#annotations.insertOne(doc);
    return annotationDoc.parse(doc);
  }

  async listAnnotations(
    projectId: string,
    range: { from?: Date; to?: Date; limit?: number } = {},
  ): Promise<contract.AnnotationRecord[]> {
    const date: Record<string, Date> = {};
    if (range.from) date['$gte'] = range.from;
    if (range.to) date['$lt'] = range.to;
    const found = this.#annotations.find({
      projectId: new ObjectId(projectId),
      ...(range.from || range.to ? { date } : {}),
    });
    const docs =
      range.limit === undefined
        ? await found.sort({ date: 1, createdAt: 1 }).toArray()
        : (await found.sort({ date: -1, createdAt: -1 }).limit(range.limit).toArray()).reverse();
    return this.unreadable.parseEach('annotation', annotationDoc, docs);
  }

  async countAnnotations(projectId: string): Promise<number> {
    return this.#annotations.countDocuments({ projectId: new ObjectId(projectId) });
  }

  async removeAnnotation(projectId: string, id: string): Promise<boolean> {
    if (!ObjectId.isValid(id)) return false;
    const { deletedCount } = await this.#annotations.deleteOne({
      _id: new ObjectId(id),
      projectId: new ObjectId(projectId),
    });
    return deletedCount === 1;
  }

  async deleteAnnotationsBefore(before: Date): Promise<number> {
    return (await this.#annotations.deleteMany({ date: { $lt: before } })).deletedCount;
  }

  async deleteFinishedUpdatesBefore(before: Date): Promise<number> {
    const { deletedCount } = await this.#updates.deleteMany({
      status: { $in: ['done', 'failed'] },
      updatedAt: { $lt: before },
    });
    return deletedCount;
  }

  async #discardSnapshot(snapshotId: ObjectId): Promise<void> {
    await this.#kpis.deleteMany({ snapshotId });
    await this.#results.deleteMany({ snapshotId });
    await this.#snapshots.deleteOne({ _id: snapshotId });
  }

  async createUpdate(update: contract.NewUpdate): Promise<void> {
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
      });
    } catch (error) {
      throw duplicateOr(error, `update ${update.id} exists`);
    }
  }

  async setUpdateState(id: string, state: contract.UpdateState): Promise<void> {
    const set: Partial<UpdateDocument> = { status: state.status, updatedAt: new Date() };
    if (state.status === 'done') {
      set.date = state.date;
      set.missing = (state.missing ?? []).map((m) => ({ ...m }));
    }
    if (state.reason !== undefined) set.reason = state.reason;
    // `done` is final: a late word from an earlier delivery (one that lost its connection while a
    // redelivery finished the update) must not turn it back into queued, running or failed; and
    // `failed` gives way to `done` only (see Store.setUpdateState in store.ts).
    const filter =
      state.status === 'done'
        ? { _id: id }
        : { _id: id, status: { $nin: state.status === 'failed' ? ['done'] : ['done', 'failed'] } };
    await this.#updates.updateOne(filter, {
      $set: set,
      ...(state.status === 'running' ? { $inc: { attempts: 1 } } : {}),
    });
  }

  async setUpdateProgress(id: string, progress: readonly contract.UpdateProgress[]): Promise<void> {
    await this.#updates.updateOne(
      { _id: id, status: { $ne: 'done' } },
      { $set: { progress: progress.map((p) => ({ ...p })), updatedAt: new Date() } },
    );
  }

  async findUpdate(userId: string, id: string): Promise<contract.UpdateRecord | null> {
    const doc = await this.#updates.findOne({ _id: id, userId: new ObjectId(userId) });
    return doc ? updateDoc.parse(doc) : null;
  }

  async countPendingUpdates(location: Location): Promise<number> {
    return this.#updates.countDocuments({
      status: { $in: ['queued', 'running'] },
      waiting: { $ne: true },
      locations: location,
    });
  }

  async listUnfinishedUpdates(): Promise<contract.UpdateRecord[]> {
    const docs = await this.#updates
      .find({ status: { $in: ['queued', 'running'] } })
      .sort({ createdAt: 1 })
      .toArray();
    return this.unreadable.parseEach('update', updateDoc, docs);
  }

  async userBacklog(userId: string): Promise<{ updates: number; runs: number }> {
    // Bounded by the per-user limits themselves: summed here rather than with $group, which
    // not every MongoDB-wire server implements alike.
    const docs = await this.#updates
      .find(
        { userId: new ObjectId(userId), status: { $in: ['queued', 'running'] } },
        { projection: { devices: 1, locations: 1, runs: 1 } },
      )
      .toArray();
    return {
      updates: docs.length,
      runs: docs.reduce((sum, d) => sum + d.devices.length * d.locations.length * (d.runs ?? 1), 0),
    };
  }

  async admitUpdates(userId: string, limit: number): Promise<contract.UpdateRecord[]> {
    const user = new ObjectId(userId);
    const active = await this.#updates.countDocuments({
      userId: user,
      status: { $in: ['queued', 'running'] },
      waiting: { $ne: true },
    });
    if (active >= limit) return [];
    const next = await this.#updates
      .find({ userId: user, status: 'queued', waiting: true })
      .sort({ createdAt: 1, _id: 1 })
      .limit(limit - active)
      .toArray();
    const admitted: contract.UpdateRecord[] = [];
    for (const doc of next) {
      const now = new Date();
      // Conditional: of two gateways admitting at once, each update goes to one of them.
      const { modifiedCount } = await this.#updates.updateOne(
        { _id: doc._id, waiting: true },
        { $set: { waiting: false, admittedAt: now, updatedAt: now } },
      );
      if (modifiedCount === 1)
        admitted.push(updateDoc.parse({ ...doc, waiting: false, admittedAt: now, updatedAt: now }));
    }
    return admitted;
  }

  async claimSlot(kind: string, userId: string, limit: number, ttlMs: number): Promise<string | null> {
    const now = new Date();
    const id = new ObjectId().toHexString();
    await this.#slots.deleteMany({ expiresAt: { $lt: now } });
    await this.#slots.insertOne({ _id: id, kind, userId, expiresAt: new Date(now.getTime() + ttlMs) });
    // Taken first, counted after: two gateways claiming the last slot at once both see two and
    // both give theirs back, rather than both going over the limit.
    const taken = await this.#slots.countDocuments({ kind, userId, expiresAt: { $gte: now } });
    if (taken <= limit) return id;
    await this.#slots.deleteOne({ _id: id });
    return null;
  }

  async releaseSlot(id: string): Promise<void> {
    await this.#slots.deleteOne({ _id: id });
  }

  async readNote(key: string): Promise<string | null> {
    const doc = await this.#notes.findOne({ _id: key });
    return doc ? z.string().parse(doc.value) : null;
  }

  async writeNote(key: string, value: string): Promise<void> {
    await this.#notes.updateOne({ _id: key }, { $set: { value } }, { upsert: true });
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = new Date();
    try {
      // Matches a lease that is ours or has run out; otherwise the upsert's insert meets the
      // existing _id and fails: someone else holds it.
      await this.#leases.updateOne(
        { _id: name, $or: [{ holder }, { expiresAt: { $lt: now } }] },
        { $set: { holder, expiresAt: new Date(now.getTime() + ttlMs) } },
        { upsert: true },
      );
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return false;
      throw error;
    }
  }

  async listScheduledProjects(): Promise<Array<contract.ProjectRecord & { scheduledThrough: Date | null }>> {
    const docs = await this.#projects.find({ schedule: { $type: 'string' } }).toArray();
    return this.unreadable.parseEach('project', scheduledProjectDoc, docs);
  }

  async markScheduled(projectId: string, tick: Date): Promise<void> {
    await this.#projects.updateOne(
      {
        _id: new ObjectId(projectId),
        $or: [
          { scheduledThrough: { $exists: false } },
          { scheduledThrough: null },
          { scheduledThrough: { $lt: tick } },
        ],
      },
      { $set: { scheduledThrough: tick } },
    );
  }

  async deleteSnapshotsBefore(before: Date, limit: number): Promise<number> {
    const old = await this.#snapshots
      .find({ date: { $lt: before } }, { projection: { _id: 1 } })
      .limit(limit)
      .toArray();
    // KPI records and results first: a deletion cut short leaves a snapshot to find next time.
    for (const { _id } of old) await this.#discardSnapshot(_id as ObjectId);
    return old.length;
  }

  async listSnapshots(projectId: string, page?: contract.SnapshotPage): Promise<contract.SnapshotSummary[]> {
    const filter = {
      projectId: new ObjectId(projectId),
      status: 'complete',
      ...(page?.before ? { date: { $lt: page.before } } : {}),
    };
    const found = this.#snapshots.find(filter, {
      projection: { date: 1, updateType: 1, available: 1, _id: 1, projectId: 1, updateId: 1, url: 1 },
    });
    const docs = page
      ? (await found.sort({ date: -1 }).limit(page.limit).toArray()).reverse()
      : await found.sort({ date: 1 }).toArray();
    return this.unreadable.parseEach('snapshot', summaryDoc, docs);
  }

  async *streamKpis(filter: contract.OverviewFilter): AsyncIterable<readonly contract.KpiRow[]> {
    const { userId, from, to, domain, updateType, sections } = filter;
    // Records still pending belong to a snapshot being written, or to one that never completed.
    const query: Record<string, unknown> = {
      userId: new ObjectId(userId),
      date: { $gte: from, $lt: to },
      pending: { $ne: true },
    };
    if (domain) query['domain'] = domain;
    if (updateType) query['updateType'] = updateType;
    if (sections && sections.length > 0) query['section'] = { $in: sections };
    const cursor = this.#kpis.find(query, { projection: KPI_PROJECTION }).sort(KPI_ORDER).batchSize(KPI_BATCH);
    try {
      // What the driver already holds goes out in one batch; the next read may wait on the server.
      yield* kpiBatches(
        cursor,
        (doc) => {
          const { data, ...row } = kpiDoc.parse(doc);
          return { ...row, dataJson: JSON.stringify(data) };
        },
        () => cursor.bufferedCount() === 0,
      );
    } finally {
      await cursor.close();
    }
  }

  /**
   * A snapshot is what minutes of Lighthouse runs produced: a database that is away for a few
   * seconds (a restart, a failover) or busy with other writers is waited for rather than
   * losing them. Safe to repeat because a save is idempotent per update.
   */
  async saveSnapshot(snapshot: contract.NewSnapshot): Promise<Date> {
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

  async #saveSnapshotOnce(snapshot: contract.NewSnapshot): Promise<Date> {
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
      await this.#discardSnapshot(snapshotId);
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
    { project, updateId, date, updateType, results, missing, kpiVersion = 1 }: contract.NewSnapshot,
  ): Promise<Date> {
    const available = results.map(({ device, location }) => ({ device, location }));
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
          status: 'writing',
          createdAt: new Date(),
        });
        return candidate;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
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
    { project, updateType, results }: Pick<contract.NewSnapshot, 'project' | 'updateType' | 'results'>,
  ): Promise<void> {
    const projectId = new ObjectId(project.id);
    const userId = new ObjectId(project.userId);
    const resultDocs = await Promise.all(
      results.map(async (r) => ({
        snapshotId,
        projectId,
        date: stored,
        device: r.device,
        location: r.location,
        median: r.median,
        runs: r.runs,
        elementCount: r.elementCount,
        crux: r.crux,
        ...(r.checks ? { checks: r.checks } : {}),
        lighthouseVersion: r.lighthouseVersion,
        // Stored compressed and opaque: ~6× smaller, and Lighthouse's own keys (some contain
        // dots) never meet a server's field-name rules. From an agent of v1.5, as it sent it.
        lighthouse: new Binary(await r.lighthouse.gzip()),
      })),
    );
    if (resultDocs.length > 0) await this.#results.insertMany(resultDocs, { ordered: false });
    const kpiDocs = results.flatMap((r) =>
      r.kpis.map((k) => ({
        snapshotId,
        projectId,
        userId,
        date: stored,
        domain: project.domain,
        url: project.url,
        device: r.device,
        location: r.location,
        updateType,
        section: k.section,
        kpi: k.kpi,
        data: k.data,
        pending: true,
      })),
    );
    if (kpiDocs.length > 0) await this.#kpis.insertMany(kpiDocs, { ordered: false });
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

  async listSnapshotsBelowKpiVersion(
    version: number,
    limit: number,
  ): Promise<Array<{ projectId: string; date: Date }>> {
    // Snapshots stored before versions were have none: the seed's, 1.
    const below =
      version > 1
        ? { $or: [{ kpiVersion: { $lt: version } }, { kpiVersion: { $exists: false } }] }
        : { kpiVersion: { $lt: version } };
    const docs = await this.#snapshots
      .find({ status: 'complete', ...below }, { projection: { projectId: 1, date: 1 } })
      .sort({ date: 1 })
      .limit(limit)
      .toArray();
    return docs.map((doc) => ({ projectId: String(doc['projectId']), date: z.date().parse(doc['date']) }));
  }

  async replaceSnapshotKpis(
    { projectId, date }: { projectId: string; date: Date },
    { sections, results, version }: contract.KpiReplacement,
  ): Promise<void> {
    const raw = await this.#snapshots.findOne({ projectId: new ObjectId(projectId), date, status: 'complete' });
    if (!raw) return;
    const snapshot = snapshotDoc.parse(raw);
    const snapshotId = raw._id as ObjectId;
    const inSections = { snapshotId, section: { $in: [...sections] } };
    // No transactions: the new records go in pending (hidden from the overview), the old ones
    // out, then the new ones are shown and the version recorded. Cut short anywhere, a second
    // run starts by clearing what the first left pending, and does it all again.
    await this.#kpis.deleteMany({ ...inSections, pending: true });
    const docs = results.flatMap((r) =>
      r.kpis.map((k) => ({
        snapshotId,
        projectId: new ObjectId(projectId),
        userId: raw['userId'],
        date: snapshot.date,
        domain: raw['domain'],
        url: snapshot.url,
        device: r.device,
        location: r.location,
        updateType: snapshot.updateType,
        section: k.section,
        kpi: k.kpi,
        data: k.data,
        pending: true,
      })),
    );
    if (docs.length > 0) await this.#kpis.insertMany(docs, { ordered: false });
    await this.#kpis.deleteMany({ ...inSections, pending: { $ne: true } });
    await this.#kpis.updateMany({ snapshotId, pending: true }, { $unset: { pending: '' } });
    await this.#snapshots.updateOne({ _id: snapshotId }, { $set: { kpiVersion: version } });
  }

  async saveFieldHistory(
    project: contract.ProjectRecord,
    rows: ReadonlyArray<{ date: Date; device: Device; kpis: readonly KpiRecord[] }>,
  ): Promise<void> {
    const snapshotId = fieldHistoryId(project.id);
    await this.#kpis.deleteMany({ snapshotId });
    const docs = rows.flatMap((row) =>
      row.kpis.map((k) => ({
        snapshotId,
        projectId: new ObjectId(project.id),
        userId: new ObjectId(project.userId),
        date: row.date,
        domain: project.domain,
        url: project.url,
        device: row.device,
        location: project.defaultLocation,
        updateType: 'scheduled',
        section: k.section,
        kpi: k.kpi,
        data: k.data,
      })),
    );
    if (docs.length > 0) await this.#kpis.insertMany(docs, { ordered: false });
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

  async listUnannouncedSnapshots(storedBefore: Date, limit: number): Promise<contract.UnannouncedSnapshot[]> {
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

  async findSnapshotOfUpdate(updateId: string): Promise<{ date: Date; missing: contract.MissingCell[] } | null> {
    const raw = await this.#snapshots.findOne({ updateId, status: 'complete' });
    if (!raw) return null;
    const { date, missing } = snapshotDoc.parse(raw);
    // The delivery that wrote it may have died before it showed its KPI records.
    await this.#released(raw._id as ObjectId, date);
    return { date, missing };
  }

  async findSnapshot(
    projectId: string,
    date: Date,
    filter: contract.SnapshotFilter = {},
  ): Promise<contract.SnapshotRecord | null> {
    const raw = await this.#snapshots.findOne({ projectId: new ObjectId(projectId), date, status: 'complete' });
    if (!raw) return null;
    const snapshot = snapshotDoc.parse(raw);
    const docs = await this.#results.find(resultsOf(raw._id, filter)).toArray();
    const results = docs.map((doc) => {
      const { lighthouse, ...r } = resultDoc.parse(doc);
      return storedCell(r, lighthouse.buffer);
    });
    return { ...snapshot, results };
  }

  async findSnapshotCells(
    projectId: string,
    date: Date,
    filter: contract.SnapshotFilter = {},
  ): Promise<contract.SnapshotCells | null> {
    const raw = await this.#snapshots.findOne({ projectId: new ObjectId(projectId), date, status: 'complete' });
    if (!raw) return null;
    const docs = await this.#results.find(resultsOf(raw._id, filter), { projection: { lighthouse: 0 } }).toArray();
    const results = docs.map((doc) =>
      cellReadLater(records.result.parse(doc), async () => {
        const stored = await this.#results.findOne({ _id: doc._id }, { projection: { lighthouse: 1 } });
        // Deleted since (retention, a removed project): the reader's answer cannot be whole.
        if (!stored) throw new Error('the result is no longer stored');
        return resultDoc.shape.lighthouse.parse(stored['lighthouse']).buffer;
      }),
    );
    return { ...snapshotDoc.parse(raw), results };
  }
}

/** The query of a snapshot's results, as a read filters them. */
function resultsOf(snapshotId: unknown, filter: contract.SnapshotFilter): Record<string, unknown> {
  const query: Record<string, unknown> = { snapshotId };
  if (filter.device) query['device'] = filter.device;
  if (filter.locations && filter.locations.length > 0) query['location'] = { $in: filter.locations };
  return query;
}

function duplicateOr(error: unknown, message: string): unknown {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY ? new DuplicateError(message) : error;
}

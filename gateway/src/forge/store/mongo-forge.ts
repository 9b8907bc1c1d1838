import { ObjectId, type Collection, type Db } from 'mongodb';
import { z } from 'zod';
import type { Forge } from '@perfwatch/common';
import { duplicateOr, isDuplicateKey, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  forgeRecords,
  MAX_REPORT_ERROR,
  newForgeEventRecord,
  type ForgeEventRecord,
  type ForgeLinkRecord,
  type ForgeStore,
  type LinkSecrets,
  type NewForgeEvent,
} from './forge-store.ts';

const records = forgeRecords(mongoForms);
/** A link is keyed by its project: one link per project. */
const linkDoc = z.preprocess((doc) => {
  const { _id, ...rest } = doc as Record<string, unknown>;
  return { ...rest, projectId: _id };
}, records.link);
/** An event is keyed by its forge's identity of it: the unique key that makes a redelivery a duplicate. */
const eventDoc = z.preprocess((doc) => {
  const { _id, ...rest } = doc as Record<string, unknown>;
  return { ...rest, key: _id };
}, records.event);

interface LinkDocument extends Omit<ForgeLinkRecord, 'projectId' | 'userId'> {
  _id: ObjectId;
  userId: ObjectId;
}
interface EventDocument extends Omit<ForgeEventRecord, 'key' | 'linkProjectId' | 'previewProjectId'> {
  _id: string;
  linkProjectId: ObjectId;
  previewProjectId: ObjectId;
}

export const forgeIndexes = (db: Db) => [
  db.collection('forge_links').createIndex({ forge: 1, repositoryKey: 1 }),
  // The reporter's due events.
  db.collection('forge_events').createIndex({ reportedAt: 1, receivedAt: 1 }),
];

/** Forge links, preview marks and events in MongoDB: `forge_links`, `forge_previews`, `forge_events`, `forge_claims`. */
export class MongoForge implements ForgeStore {
  readonly #base: MongoDatabase;
  readonly #links: Collection<LinkDocument>;
  readonly #previews: Collection<{ _id: ObjectId; linkProjectId: ObjectId }>;
  readonly #events: Collection<EventDocument>;
  /** One document per attempt at reporting an event (`<key>#<attempt>`): who may make it, until when. */
  readonly #claims: Collection<{ _id: string; expiresAt: Date }>;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#links = base.db.collection<LinkDocument>('forge_links');
    this.#previews = base.db.collection('forge_previews');
    this.#events = base.db.collection<EventDocument>('forge_events');
    this.#claims = base.db.collection('forge_claims');
  }

  async setForgeLink({ projectId, userId, ...link }: ForgeLinkRecord): Promise<void> {
    const doc = { ...link, userId: new ObjectId(userId) };
    await this.#links.replaceOne({ _id: new ObjectId(projectId) }, doc, { upsert: true });
  }

  async findForgeLink(projectId: string): Promise<ForgeLinkRecord | null> {
    if (!ObjectId.isValid(projectId)) return null;
    const doc = await this.#links.findOne({ _id: new ObjectId(projectId) });
    return doc ? linkDoc.parse(doc) : null;
  }

  async removeForgeLink(projectId: string): Promise<boolean> {
    if (!ObjectId.isValid(projectId)) return false;
    return (await this.#links.deleteOne({ _id: new ObjectId(projectId) })).deletedCount === 1;
  }

  async replaceForgeLinkSecrets(projectId: string, expected: string, sealed: LinkSecrets): Promise<boolean> {
    const found = await this.#links.updateOne(
      { _id: new ObjectId(projectId), tokenSealed: expected },
      { $set: sealed },
    );
    return found.matchedCount === 1;
  }

  async listForgeLinks(forge: Forge, repositoryKeys: readonly string[]): Promise<ForgeLinkRecord[]> {
    const docs = await this.#links.find({ forge, repositoryKey: { $in: [...repositoryKeys] } }).toArray();
    return this.#base.unreadable.parseEach('forge link', linkDoc, docs);
  }

  async markPreviewProject(previewProjectId: string, linkProjectId: string): Promise<void> {
    await this.#previews.updateOne(
      { _id: new ObjectId(previewProjectId) },
      { $setOnInsert: { linkProjectId: new ObjectId(linkProjectId) } },
      { upsert: true },
    );
  }

  async previewOf(projectId: string): Promise<string | null> {
    if (!ObjectId.isValid(projectId)) return null;
    const doc = await this.#previews.findOne({ _id: new ObjectId(projectId) });
    return doc ? doc.linkProjectId.toHexString() : null;
  }
  async listPreviewProjects(): Promise<string[]> {
    return (await this.#previews.find({}, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id.toHexString());
  }

  async addForgeEvent(event: NewForgeEvent): Promise<void> {
    const { key, linkProjectId, previewProjectId, ...rest } = newForgeEventRecord(event);
    const doc: EventDocument = {
      ...rest,
      _id: key,
      linkProjectId: new ObjectId(linkProjectId),
      previewProjectId: new ObjectId(previewProjectId),
    };
    try {
      await this.#events.insertOne(doc);
    } catch (error) {
      throw duplicateOr(error, `forge event ${key} was received already`);
    }
  }

  async findForgeEvent(key: string): Promise<ForgeEventRecord | null> {
    const doc = await this.#events.findOne({ _id: key });
    return doc ? eventDoc.parse(doc) : null;
  }

  async setForgeEventUpdate(key: string, updateId: string): Promise<void> {
    await this.#events.updateOne({ _id: key }, { $set: { updateId } });
  }

  async removeForgeEvent(key: string): Promise<void> {
    await this.#events.deleteOne({ _id: key });
  }

  async listUnreportedForgeEvents(limit: number, now = new Date()): Promise<ForgeEventRecord[]> {
    const docs = await this.#events
      .find({
        reportedAt: null,
        updateId: { $ne: null },
        $or: [{ nextAttemptAt: null }, { nextAttemptAt: { $lte: now } }],
      })
      .sort({ receivedAt: 1, _id: 1 })
      .limit(limit)
      .toArray();
    return this.#base.unreadable.parseEach('forge event', eventDoc, docs);
  }

  async claimForgeEvent(
    { key, reportAttempts }: Pick<ForgeEventRecord, 'key' | 'reportAttempts'>,
    now: Date,
    until: Date,
  ): Promise<boolean> {
    // An attempt is claimed by inserting its document: a unique _id is the one write every
    // MongoDB-wire server makes atomic (two updateOne or findOneAndUpdate calls at once both
    // matched on FerretDB; this slice's contract test saw it). A claim that ran out (its
    // gateway died mid-report) is taken over by the update, atomic on MongoDB.
    try {
      await this.#claims.updateOne(
        { _id: `${key}#${reportAttempts}`, expiresAt: { $lt: now } },
        { $set: { expiresAt: until } },
        { upsert: true },
      );
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
    return (await this.#events.countDocuments({ _id: key, reportedAt: null, reportAttempts }, { limit: 1 })) === 1;
  }

  async deferForgeEvent(key: string, until: Date): Promise<void> {
    await this.#events.updateOne({ _id: key, reportedAt: null }, { $set: { nextAttemptAt: until } });
  }

  async markForgeEventReported(key: string, at: Date): Promise<void> {
    await this.#events.updateOne({ _id: key }, { $set: { reportedAt: at, nextAttemptAt: null } });
  }

  async recordForgeReportFailure(key: string, error: string, nextAttemptAt: Date): Promise<void> {
    await this.#events.updateOne(
      { _id: key },
      { $inc: { reportAttempts: 1 }, $set: { lastReportError: error.slice(0, MAX_REPORT_ERROR), nextAttemptAt } },
    );
  }

  async deleteForgeEventsBefore(before: Date): Promise<number> {
    await this.#claims.deleteMany({ expiresAt: { $lt: before } });
    return (await this.#events.deleteMany({ receivedAt: { $lt: before } })).deletedCount;
  }
}

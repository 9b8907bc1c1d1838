import { ObjectId, type Collection, type Db } from 'mongodb';
import { asRecord, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import { siteUpdateRecords, type SiteUpdateRecord, type SiteUpdatesStore } from './site-updates-store.ts';

/** A site update as its document keeps it: the pages, and the failures appended apart. */
interface SiteUpdateDoc {
  _id: string;
  userId: ObjectId;
  siteId: string;
  origin: string;
  createdAt: Date;
  pages: Array<{ url: string; updateId: string | null }>;
  failures: Array<{ url: string; reason: string }>;
}

const siteUpdateDoc = asRecord(siteUpdateRecords(mongoForms));

export const siteUpdateIndexes = (db: Db) => [db.collection('site_update_failures').createIndex({ siteUpdateId: 1 })];

/** Site updates in MongoDB: the `site_updates` collection (the update's UUID its `_id`), pages failed later in `site_update_failures`. */
export class MongoSiteUpdates implements SiteUpdatesStore {
  readonly #updates: Collection<SiteUpdateDoc>;
  readonly #failures: Collection<{ siteUpdateId: string; url: string; reason: string }>;

  constructor(base: MongoDatabase) {
    this.#updates = base.db.collection('site_updates');
    this.#failures = base.db.collection('site_update_failures');
  }

  async addSiteUpdate(record: SiteUpdateRecord): Promise<void> {
    const { id, userId, pages, ...rest } = record;
    await this.#updates.insertOne({
      _id: id,
      ...rest,
      userId: new ObjectId(userId),
      pages: pages.map(({ url, updateId }) => ({ url, updateId })),
      failures: pages.flatMap(({ url, reason }) => (reason === null ? [] : [{ url, reason }])),
    });
  }

  async findSiteUpdate(userId: string, id: string): Promise<SiteUpdateRecord | null> {
    if (!ObjectId.isValid(userId)) return null;
    const doc = await this.#updates.findOne({ _id: id, userId: new ObjectId(userId) });
    if (!doc) return null;
    const failures = await this.#failures.find({ siteUpdateId: id }, { sort: { _id: 1 } }).toArray();
    return siteUpdateDoc.parse({
      ...doc,
      failures: [...doc.failures, ...failures.map(({ url, reason }) => ({ url, reason }))],
    });
  }

  async failSiteUpdatePage(id: string, url: string, reason: string): Promise<void> {
    // A document each: two failures at once are two inserts, none read and written back.
    await this.#failures.insertOne({ siteUpdateId: id, url, reason });
  }
}

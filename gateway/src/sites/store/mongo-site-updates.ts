import { ObjectId, type Collection } from 'mongodb';
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

/** Site updates in MongoDB: the `site_updates` collection, the update's UUID its `_id`. */
export class MongoSiteUpdates implements SiteUpdatesStore {
  readonly #updates: Collection<SiteUpdateDoc>;

  constructor(base: MongoDatabase) {
    this.#updates = base.db.collection('site_updates');
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
    return doc ? siteUpdateDoc.parse(doc) : null;
  }

  async failSiteUpdatePage(id: string, url: string, reason: string): Promise<void> {
    await this.#updates.updateOne({ _id: id }, { $push: { failures: { url, reason } } });
  }
}

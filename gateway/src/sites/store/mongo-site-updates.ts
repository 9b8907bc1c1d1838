import { ObjectId, type Collection } from 'mongodb';
import { asRecord, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  siteUpdateRecords,
  type SiteUpdatePage,
  type SiteUpdateRecord,
  type SiteUpdatesStore,
} from './site-updates-store.ts';

/** A site update as its document keeps it. */
interface SiteUpdateDoc {
  _id: string;
  userId: ObjectId;
  siteId: string;
  origin: string;
  createdAt: Date;
  pages: SiteUpdatePage[];
}

const siteUpdateDoc = asRecord(siteUpdateRecords(mongoForms));

/** Site updates in MongoDB: the `site_updates` collection, the update's UUID its `_id`. */
export class MongoSiteUpdates implements SiteUpdatesStore {
  readonly #updates: Collection<SiteUpdateDoc>;

  constructor(base: MongoDatabase) {
    this.#updates = base.db.collection('site_updates');
  }

  async addSiteUpdate(record: SiteUpdateRecord): Promise<void> {
    const { id, userId, ...rest } = record;
    await this.#updates.insertOne({ _id: id, ...rest, userId: new ObjectId(userId) });
  }

  async findSiteUpdate(userId: string, id: string): Promise<SiteUpdateRecord | null> {
    if (!ObjectId.isValid(userId)) return null;
    const doc = await this.#updates.findOne({ _id: id, userId: new ObjectId(userId) });
    return doc ? siteUpdateDoc.parse(doc) : null;
  }
}

import { ObjectId, type Collection, type Db } from 'mongodb';
import { storedBudgets } from '@perfwatch/common';
import { asRecord, duplicateOr, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  newSiteRecord,
  pagesAfterDiscovery,
  siteRecords,
  storedGroupBudgets,
  type DiscoveryWrite,
  type FoundPage,
  type NewSite,
  type PagesChange,
  type SiteBudgets,
  type SiteDiscoveryState,
  type SitePageRecord,
  type SiteRecord,
  type SiteSettings,
  type SitesStore,
} from './sites-store.ts';

const records = siteRecords(mongoForms);
const siteDoc = asRecord(records.site);
const pageDoc = records.page;

export const siteIndexes = (db: Db) => [
  db.collection('sites').createIndex({ userId: 1, origin: 1 }, { unique: true }),
  db.collection('site_pages').createIndex({ siteId: 1, url: 1 }, { unique: true }),
];

/** The ObjectId an id stands for; null for text that is no id (no site has it). */
const objectIdOf = (id: string): ObjectId | null => (/^[0-9a-f]{24}$/i.test(id) ? new ObjectId(id) : null);

/** Sites in MongoDB: the `sites` collection, their pages in `site_pages`. */
export class MongoSites implements SitesStore {
  readonly #base: MongoDatabase;
  readonly #sites: Collection;
  readonly #pages: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#sites = base.db.collection('sites');
    this.#pages = base.db.collection('site_pages');
  }

  async addSite(site: NewSite): Promise<SiteRecord> {
    const { id, ...record } = newSiteRecord(site, new ObjectId().toHexString(), new Date());
    const doc = {
      _id: new ObjectId(id),
      ...record,
      userId: new ObjectId(site.userId),
      budgets: storedBudgets(record.budgets),
      groupBudgets: storedGroupBudgets(record.groupBudgets),
    };
    try {
      await this.#sites.insertOne(doc);
    } catch (error) {
      throw duplicateOr(error, `site ${site.origin} exists for this organisation`);
    }
    return siteDoc.parse(doc);
  }

  async findSite(userId: string, id: string): Promise<SiteRecord | null> {
    const [_id, user] = [objectIdOf(id), objectIdOf(userId)];
    const doc = _id && user && (await this.#sites.findOne({ _id, userId: user }));
    return doc ? siteDoc.parse(doc) : null;
  }

  async findSiteByOrigin(userId: string, origin: string): Promise<SiteRecord | null> {
    const doc = await this.#sites.findOne({ userId: new ObjectId(userId), origin });
    return doc ? siteDoc.parse(doc) : null;
  }

  async listSites(userId?: string): Promise<SiteRecord[]> {
    const docs = await this.#sites
      .find(userId ? { userId: new ObjectId(userId) } : {})
      .sort({ origin: 1, userId: 1 })
      .toArray();
    return this.#base.unreadable.parseEach('site', siteDoc, docs);
  }

  async setSiteSettings(siteId: string, settings: SiteSettings): Promise<void> {
    const { sitemap, include, exclude, maxPages, sampleSize, groupPatterns } = settings;
    const { devices, locations, defaultLocation, runs, schedule } = settings;
    await this.#sites.updateOne(
      { _id: new ObjectId(siteId) },
      {
        $set: {
          ...{ sitemap, include, exclude, maxPages, sampleSize, groupPatterns },
          ...{ devices, locations, defaultLocation, runs, schedule },
        },
      },
    );
  }

  async setSiteBudgets(siteId: string, { budgets, groupBudgets }: SiteBudgets): Promise<void> {
    await this.#sites.updateOne(
      { _id: new ObjectId(siteId) },
      {
        $set: { budgets: storedBudgets(budgets), groupBudgets: storedGroupBudgets(groupBudgets) },
      },
    );
  }

  async setSiteDiscovery(siteId: string, state: SiteDiscoveryState): Promise<void> {
    await this.#sites.updateOne({ _id: new ObjectId(siteId) }, { $set: { lastDiscovery: state } });
  }

  async markSiteScheduled(siteId: string, tick: Date): Promise<boolean> {
    const earlier = [
      { scheduledThrough: { $exists: false } },
      { scheduledThrough: null },
      { scheduledThrough: { $lt: tick } },
    ];
    const result = await this.#sites.updateOne(
      { _id: new ObjectId(siteId), $or: earlier },
      { $set: { scheduledThrough: tick } },
    );
    return result.modifiedCount === 1;
  }

  async removeSite(userId: string, id: string): Promise<boolean> {
    const [_id, user] = [objectIdOf(id), objectIdOf(userId)];
    if (!_id || !user || (await this.#sites.countDocuments({ _id, userId: user })) !== 1) return false;
    // Pages first, the site last: a removal cut short can simply be run again.
    await this.#pages.deleteMany({ siteId: _id });
    await this.#sites.deleteOne({ _id });
    return true;
  }

  async replaceSitePages(
    siteId: string,
    found: readonly FoundPage[],
    at: Date,
    how?: DiscoveryWrite,
  ): Promise<PagesChange> {
    const site = new ObjectId(siteId);
    const existing = await this.listSitePages(siteId);
    const { pages, pruned, change } = pagesAfterDiscovery(existing, found, siteId, at, how);
    // Pages are replaced whole and only pages gone before deleted: the same discovery written twice is written once.
    // One at a time: FerretDB stalls on a batch of replacements of existing documents.
    for (const page of pages)
      await this.#pages.replaceOne({ siteId: site, url: page.url }, { ...page, siteId: site }, { upsert: true });
    if (pruned.length > 0) await this.#pages.deleteMany({ siteId: site, url: { $in: pruned } });
    return change;
  }

  async listSitePages(siteId: string): Promise<SitePageRecord[]> {
    const site = objectIdOf(siteId);
    if (!site) return [];
    const docs = await this.#pages
      .find({ siteId: site }, { projection: { _id: 0 } })
      .sort({ url: 1 })
      .toArray();
    return this.#base.unreadable.parseEach('site page', pageDoc, docs);
  }
}

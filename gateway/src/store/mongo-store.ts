import { MongoClient, type Collection, type Db } from 'mongodb';
import { z } from 'zod';
import { accountIndexes, MongoAccounts } from '../accounts/store/mongo-accounts.ts';
import { MongoWebhooks, webhookIndexes } from '../alerts/store/mongo-webhooks.ts';
import { auditLogIndexes, MongoAuditLog } from '../audit-log/store/mongo-audit-log.ts';
import { forgeIndexes, MongoForge } from '../forge/store/mongo-forge.ts';
import { MongoProjects, projectIndexes } from '../projects/store/mongo-projects.ts';
import { MongoScheduling } from '../scheduling/store/mongo-scheduling.ts';
import { annotationIndexes, MongoAnnotations } from '../snapshots/store/mongo-annotations.ts';
import { kpiIndexes, MongoKpis } from '../snapshots/store/mongo-kpis.ts';
import { MongoSnapshotReads } from '../snapshots/store/mongo-snapshot-reads.ts';
import { MongoSnapshots, snapshotIndexes, type MongoSnapshotsOptions } from '../snapshots/store/mongo-snapshots.ts';
import { giveOwnOrganisations, MongoTeams, teamIndexes } from '../teams/store/mongo-teams.ts';
import { MongoSso, ssoIndexes } from '../sso/store/mongo-sso.ts';
import { MongoSites, siteIndexes } from '../sites/store/mongo-sites.ts';
import { MongoSiteUpdates } from '../sites/store/mongo-site-updates.ts';
import { MongoUpdates, updateIndexes } from '../updates/store/mongo-updates.ts';
import type { MongoDatabase } from './mongo-database.ts';
import { combineSlices } from './store-slices.ts';
import type { Store, StoreBase } from './store.ts';
import { UnreadableRecords } from './unreadable-records.ts';

export { KPI_ORDER, KPI_PROJECTION } from '../snapshots/store/mongo-kpis.ts';

interface MongoStoreOptions extends MongoSnapshotsOptions {
  uri: string;
  dbName: string;
}

/** Every slice's indexes, made (or found made) when the store opens. */
const indexes = (db: Db) => [
  ...accountIndexes(db),
  ...projectIndexes(db),
  ...updateIndexes(db),
  ...snapshotIndexes(db),
  ...kpiIndexes(db),
  ...annotationIndexes(db),
  ...webhookIndexes(db),
  ...forgeIndexes(db),
  ...teamIndexes(db),
  ...auditLogIndexes(db),
  ...ssoIndexes(db),
  ...siteIndexes(db),
];

// The slices' methods are put on each MongoStore by combineSlices (see its constructor).
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface MongoStore extends Store {}

/** The MongoDB store: every slice over one connection, one database. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class MongoStore implements StoreBase {
  readonly #client: MongoClient;
  readonly #db: Db;
  readonly #notes: Collection<{ _id: string; value: string }>;
  /** The database this store uses (tests and tools read it directly). */
  readonly dbName: string;
  readonly unreadable = new UnreadableRecords();

  constructor({ uri, dbName, ...options }: MongoStoreOptions) {
    this.dbName = dbName;
    this.#client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000, appName: 'perfwatch' });
    this.#db = this.#client.db(dbName);
    this.#notes = this.#db.collection<{ _id: string; value: string }>('notes');
    const base: MongoDatabase = { db: this.#db, unreadable: this.unreadable };
    combineSlices(this, [
      new MongoAccounts(base),
      new MongoProjects(base),
      new MongoUpdates(base),
      new MongoSnapshots(base, options),
      new MongoSnapshotReads(base),
      new MongoKpis(base),
      new MongoAnnotations(base),
      new MongoWebhooks(base),
      new MongoScheduling(base),
      new MongoForge(base),
      new MongoTeams(base),
      new MongoAuditLog(base),
      new MongoSso(base),
      new MongoSites(base),
      new MongoSiteUpdates(base),
    ]);
  }

  async init(): Promise<void> {
    await this.#client.connect();
    await Promise.all(indexes(this.#db));
    // Users made before organisations, or whose making stopped half way, gain their own.
    await giveOwnOrganisations(this.#db);
  }

  async close(): Promise<void> {
    await this.#client.close();
  }

  async ping(): Promise<void> {
    await this.#db.command({ ping: 1 });
  }

  async readNote(key: string): Promise<string | null> {
    const doc = await this.#notes.findOne({ _id: key });
    return doc ? z.string().parse(doc.value) : null;
  }

  async writeNote(key: string, value: string): Promise<void> {
    await this.#notes.updateOne({ _id: key }, { $set: { value } }, { upsert: true });
  }
}

import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { accountsSchema, SqliteAccounts } from '../accounts/store/sqlite-accounts.ts';
import { SqliteWebhooks, webhooksSchema } from '../alerts/store/sqlite-webhooks.ts';
import { auditLogSchema, SqliteAuditLog } from '../audit-log/store/sqlite-audit-log.ts';
import { forgeSchema, SqliteForge } from '../forge/store/sqlite-forge.ts';
import { projectsSchema, SqliteProjects } from '../projects/store/sqlite-projects.ts';
import { schedulingSchema, SqliteScheduling } from '../scheduling/store/sqlite-scheduling.ts';
import { annotationsSchema, SqliteAnnotations } from '../snapshots/store/sqlite-annotations.ts';
import { kpisSchema, SqliteKpis } from '../snapshots/store/sqlite-kpis.ts';
import { SqliteSnapshotReads } from '../snapshots/store/sqlite-snapshot-reads.ts';
import { snapshotsSchema, SqliteSnapshots } from '../snapshots/store/sqlite-snapshots.ts';
import { SqliteTeams, teamsSchema } from '../teams/store/sqlite-teams.ts';
import { SqliteSso, ssoSchema } from '../sso/store/sqlite-sso.ts';
import { SqliteSites, sitesSchema } from '../sites/store/sqlite-sites.ts';
import { SqliteSiteUpdates, siteUpdatesSchema } from '../sites/store/sqlite-site-updates.ts';
import { SqliteUpdates, updatesSchema } from '../updates/store/sqlite-updates.ts';
import { SqliteDatabase } from './sqlite-database.ts';
import { migrate, type SqliteSchema } from './sqlite-migrations.ts';
import { combineSlices } from './store-slices.ts';
import type { Store, StoreBase } from './store.ts';
import { UnreadableRecords } from './unreadable-records.ts';

/** Every slice's tables and numbered steps: the file's schema. */
const SCHEMAS: readonly SqliteSchema[] = [
  accountsSchema,
  projectsSchema,
  updatesSchema,
  snapshotsSchema,
  kpisSchema,
  annotationsSchema,
  webhooksSchema,
  schedulingSchema,
  forgeSchema,
  // After accounts: its step gives the file's users their own organisations.
  teamsSchema,
  auditLogSchema,
  ssoSchema,
  sitesSchema,
  siteUpdatesSchema,
];

// The slices' methods are put on each SqliteStore by combineSlices (see its constructor).
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface SqliteStore extends Store {}

/**
 * The embedded store of `perfwatch start`: every slice over one SQLite file (Node's built-in
 * `node:sqlite`, so nothing to install or compile), same contract and same test suites as the
 * MongoDB store. One process owns the file.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class SqliteStore implements StoreBase {
  readonly unreadable = new UnreadableRecords();
  readonly #path: string;
  readonly #synchronous: 'FULL' | 'NORMAL';
  readonly #db: SqliteDatabase;

  /**
   * `synchronous: 'normal'` gives up durability (see init) and is there for one reason: for
   * bench/sqlite-durability.ts to measure what it costs. Nothing else sets it.
   */
  constructor({ path, synchronous = 'full' }: { path: string; synchronous?: 'full' | 'normal' }) {
    this.#path = path;
    this.#synchronous = synchronous === 'full' ? 'FULL' : 'NORMAL';
    this.#db = new SqliteDatabase(path, this.unreadable);
    const db = this.#db;
    combineSlices(this, [
      new SqliteAccounts(db),
      new SqliteProjects(db),
      new SqliteUpdates(db),
      new SqliteSnapshots(db),
      new SqliteSnapshotReads(db),
      new SqliteKpis(db),
      new SqliteAnnotations(db),
      new SqliteWebhooks(db),
      new SqliteScheduling(db),
      new SqliteForge(db),
      new SqliteTeams(db),
      new SqliteAuditLog(db),
      new SqliteSso(db),
      new SqliteSites(db),
      new SqliteSiteUpdates(db),
    ]);
  }

  async init(): Promise<void> {
    if (this.#path !== ':memory:') {
      mkdirSync(dirname(this.#path), { recursive: true, mode: 0o700 });
      // Created 0600 before SQLite opens it, so it is never readable by others, even briefly.
      if (!existsSync(this.#path)) closeSync(openSync(this.#path, 'a', 0o600));
    }
    const db = new DatabaseSync(this.#path);
    // WAL: readers never wait for the writer. synchronous = FULL: a commit returns once the WAL
    // is on the disk, so a write the API acknowledged (an update accepted, a token revoked, a
    // snapshot stored) outlives a power loss; NORMAL could lose the last ones. What it costs a
    // snapshot's save is measured in bench/results.md (SQLite durability).
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${this.#synchronous}; PRAGMA busy_timeout = 5000;`);
    // Token digests, projects and results: readable by this user only (the WAL files too).
    if (this.#path !== ':memory:')
      for (const file of [this.#path, `${this.#path}-wal`, `${this.#path}-shm`])
        if (existsSync(file)) chmodSync(file, 0o600);
    try {
      migrate(db, this.#path, SCHEMAS);
    } catch (error) {
      db.close();
      throw error;
    }
    this.#db.open(db);
  }

  async close(): Promise<void> {
    this.#db.close();
  }

  async ping(): Promise<void> {
    this.#db.get('SELECT 1');
  }

  async readNote(key: string): Promise<string | null> {
    const row = this.#db.get('SELECT value FROM meta WHERE key = ?', `note:${key}`) as { value: string } | undefined;
    return row ? row.value : null;
  }

  async writeNote(key: string, value: string): Promise<void> {
    this.#db.run(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      `note:${key}`,
      value,
    );
  }
}

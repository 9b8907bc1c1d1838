import type { DatabaseSync } from 'node:sqlite';
import { asRecord, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import { siteUpdateRecords, type SiteUpdateRecord, type SiteUpdatesStore } from './site-updates-store.ts';

const TABLES = `
CREATE TABLE IF NOT EXISTS site_updates (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, site_id TEXT NOT NULL, origin TEXT NOT NULL,
  created_at INTEGER NOT NULL, pages TEXT NOT NULL, failures TEXT NOT NULL DEFAULT '[]');`;

/** The `site_updates` table. */
export const siteUpdatesSchema: SqliteSchema = {
  tables: TABLES,
  steps: [
    {
      version: 17,
      adds: 'site updates: one async update of many pages (issue 34)',
      mends: true,
      up: (db: DatabaseSync) => db.exec(TABLES),
    },
  ],
};

const siteUpdateRow = asRecord(siteUpdateRecords(sqliteForms));

/** Site updates in SQLite: a row each, its pages and failures as JSON. */
export class SqliteSiteUpdates implements SiteUpdatesStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async addSiteUpdate(record: SiteUpdateRecord): Promise<void> {
    const pages = record.pages.map(({ url, updateId }) => ({ url, updateId }));
    const failures = record.pages.flatMap(({ url, reason }) => (reason === null ? [] : [{ url, reason }]));
    this.#db.run(
      'INSERT INTO site_updates (id, user_id, site_id, origin, created_at, pages, failures) VALUES (?, ?, ?, ?, ?, ?, ?)',
      record.id,
      record.userId,
      record.siteId,
      record.origin,
      record.createdAt.getTime(),
      JSON.stringify(pages),
      JSON.stringify(failures),
    );
    return Promise.resolve();
  }

  async findSiteUpdate(userId: string, id: string): Promise<SiteUpdateRecord | null> {
    const row = this.#db.get('SELECT * FROM site_updates WHERE id = ? AND user_id = ?', id, userId);
    return Promise.resolve(row ? siteUpdateRow.parse(row) : null);
  }

  async failSiteUpdatePage(id: string, url: string, reason: string): Promise<void> {
    // One statement: json_insert appends to the array in place, so two failures at once both stay.
    this.#db.run(
      `UPDATE site_updates SET failures = json_insert(failures, '$[#]', json_object('url', ?, 'reason', ?)) WHERE id = ?`,
      url,
      reason,
      id,
    );
    return Promise.resolve();
  }
}

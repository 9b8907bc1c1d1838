import type { DatabaseSync } from 'node:sqlite';
import { asRecord, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import { siteUpdateRecords, type SiteUpdateRecord, type SiteUpdatesStore } from './site-updates-store.ts';

const TABLES = `
CREATE TABLE IF NOT EXISTS site_updates (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, site_id TEXT NOT NULL, origin TEXT NOT NULL,
  created_at INTEGER NOT NULL, pages TEXT NOT NULL);`;

/** The `site_updates` table. */
export const siteUpdatesSchema: SqliteSchema = {
  tables: TABLES,
  steps: [
    {
      // The table is made "if not exists", so the step checks for itself.
      version: 17,
      adds: 'site updates: one async update of many pages (issue 34)',
      mends: true,
      up: (db: DatabaseSync) => db.exec(TABLES),
    },
  ],
};

const siteUpdateRow = asRecord(siteUpdateRecords(sqliteForms));

/** Site updates in SQLite: a row each, its pages as JSON. */
export class SqliteSiteUpdates implements SiteUpdatesStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async addSiteUpdate(record: SiteUpdateRecord): Promise<void> {
    this.#db.run(
      'INSERT INTO site_updates (id, user_id, site_id, origin, created_at, pages) VALUES (?, ?, ?, ?, ?, ?)',
      record.id,
      record.userId,
      record.siteId,
      record.origin,
      record.createdAt.getTime(),
      JSON.stringify(record.pages),
    );
    return Promise.resolve();
  }

  async findSiteUpdate(userId: string, id: string): Promise<SiteUpdateRecord | null> {
    const row = this.#db.get('SELECT * FROM site_updates WHERE id = ? AND user_id = ?', id, userId);
    return Promise.resolve(row ? siteUpdateRow.parse(row) : null);
  }
}

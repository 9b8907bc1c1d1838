import type { DatabaseSync } from 'node:sqlite';
import { storedBudgets } from '@perfwatch/common';
import { asRecord, duplicateOr, newId, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import { addColumns, type SqliteSchema } from '../../store/sqlite-migrations.ts';
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

const NO_BUDGETS = '{"budgets":{},"maxRegression":{}}';

const TABLES = `
CREATE TABLE IF NOT EXISTS sites (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, origin TEXT NOT NULL, sitemap TEXT NOT NULL, include TEXT NOT NULL,
  exclude TEXT NOT NULL, max_pages INTEGER NOT NULL, sample_size INTEGER NOT NULL, group_patterns TEXT NOT NULL,
  devices TEXT, locations TEXT NOT NULL, default_location TEXT NOT NULL, runs INTEGER NOT NULL, schedule TEXT,
  budgets TEXT NOT NULL DEFAULT '${NO_BUDGETS}', created_at INTEGER NOT NULL, last_discovery TEXT,
  scheduled_through INTEGER, group_budgets TEXT NOT NULL DEFAULT '[]',
  UNIQUE (user_id, origin));
CREATE TABLE IF NOT EXISTS site_pages (
  site_id TEXT NOT NULL, url TEXT NOT NULL, "group" TEXT NOT NULL, sampled INTEGER NOT NULL,
  first_seen_at INTEGER NOT NULL, last_seen_at INTEGER NOT NULL, gone_at INTEGER,
  PRIMARY KEY (site_id, url));`;

/** The `sites` and `site_pages` tables. */
export const sitesSchema: SqliteSchema = {
  tables: TABLES,
  steps: [
    {
      // A file of schema 13 gains them here; the tables are made "if not exists", so the step checks for itself.
      version: 14,
      adds: 'sites and their pages (issue 34)',
      mends: true,
      up: (db: DatabaseSync) => db.exec(TABLES),
    },
    {
      version: 15,
      adds: "a site's last discovery and the last tick of its schedule handled",
      mends: true,
      up: addColumns('sites', 'last_discovery TEXT', 'scheduled_through INTEGER'),
    },
    {
      version: 16,
      adds: "a site's budgets by page group",
      mends: true,
      up: addColumns('sites', "group_budgets TEXT NOT NULL DEFAULT '[]'"),
    },
  ],
};

const records = siteRecords(sqliteForms);
const siteRow = asRecord(records.site);
const pageRow = asRecord(records.page);

/** A setting kept as JSON text; never set: NULL. */
const jsonOrNull = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));

/** The settings' columns in the order SETTINGS_SQL names them. */
const settingValues = (s: SiteSettings) => [
  s.sitemap,
  JSON.stringify(s.include),
  JSON.stringify(s.exclude),
  s.maxPages,
  s.sampleSize,
  JSON.stringify(s.groupPatterns),
  jsonOrNull(s.devices),
  JSON.stringify(s.locations),
  s.defaultLocation,
  s.runs,
  s.schedule,
];
const SETTING_COLUMNS = [
  'sitemap',
  'include',
  'exclude',
  'max_pages',
  'sample_size',
  'group_patterns',
  'devices',
  'locations',
  'default_location',
  'runs',
  'schedule',
];

const UPSERT_PAGE = `INSERT INTO site_pages (site_id, url, "group", sampled, first_seen_at, last_seen_at, gone_at)
  VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (site_id, url) DO UPDATE SET "group" = excluded."group", sampled = excluded.sampled,
  first_seen_at = excluded.first_seen_at, last_seen_at = excluded.last_seen_at, gone_at = excluded.gone_at`;

/** Sites in SQLite: the `sites` table, their pages in `site_pages`. */
export class SqliteSites implements SitesStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async addSite(site: NewSite): Promise<SiteRecord> {
    const record = newSiteRecord(site, newId(), new Date());
    const columns = ['id', 'user_id', 'origin', ...SETTING_COLUMNS, 'budgets', 'group_budgets', 'created_at'];
    try {
      this.#db.run(
        `INSERT INTO sites (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
        record.id,
        record.userId,
        record.origin,
        ...settingValues(record),
        JSON.stringify(storedBudgets(record.budgets)),
        JSON.stringify(storedGroupBudgets(record.groupBudgets)),
        record.createdAt.getTime(),
      );
    } catch (error) {
      throw duplicateOr(error, `site ${site.origin} exists for this organisation`);
    }
    return record;
  }

  async findSite(userId: string, id: string): Promise<SiteRecord | null> {
    const row = this.#db.get('SELECT * FROM sites WHERE user_id = ? AND id = ?', userId, id);
    return row ? siteRow.parse(row) : null;
  }

  async findSiteByOrigin(userId: string, origin: string): Promise<SiteRecord | null> {
    const row = this.#db.get('SELECT * FROM sites WHERE user_id = ? AND origin = ?', userId, origin);
    return row ? siteRow.parse(row) : null;
  }

  async listSites(userId?: string): Promise<SiteRecord[]> {
    const rows = userId
      ? this.#db.all('SELECT * FROM sites WHERE user_id = ? ORDER BY origin', userId)
      : this.#db.all('SELECT * FROM sites ORDER BY origin, user_id');
    return this.#db.unreadable.parseEach('site', siteRow, rows);
  }

  async setSiteSettings(siteId: string, settings: SiteSettings): Promise<void> {
    this.#db.run(
      `UPDATE sites SET ${SETTING_COLUMNS.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`,
      ...settingValues(settings),
      siteId,
    );
  }

  async setSiteBudgets(siteId: string, { budgets, groupBudgets }: SiteBudgets): Promise<void> {
    const sql = 'UPDATE sites SET budgets = ?, group_budgets = ? WHERE id = ?';
    this.#db.run(sql, JSON.stringify(storedBudgets(budgets)), JSON.stringify(storedGroupBudgets(groupBudgets)), siteId);
  }

  async setSiteDiscovery(siteId: string, state: SiteDiscoveryState): Promise<void> {
    this.#db.run('UPDATE sites SET last_discovery = ? WHERE id = ?', JSON.stringify(state), siteId);
  }

  async markSiteScheduled(siteId: string, tick: Date): Promise<boolean> {
    const sql =
      'UPDATE sites SET scheduled_through = ? WHERE id = ? AND (scheduled_through IS NULL OR scheduled_through < ?)';
    return this.#db.changes(sql, +tick, siteId, +tick) === 1;
  }

  async removeSite(userId: string, id: string): Promise<boolean> {
    return this.#db.transaction(() => {
      if (this.#db.changes('DELETE FROM sites WHERE user_id = ? AND id = ?', userId, id) !== 1) return false;
      this.#db.run('DELETE FROM site_pages WHERE site_id = ?', id);
      return true;
    });
  }

  async replaceSitePages(
    siteId: string,
    found: readonly FoundPage[],
    at: Date,
    how?: DiscoveryWrite,
  ): Promise<PagesChange> {
    return this.#db.transaction(() => {
      const existing = this.#pages(siteId);
      const { pages, pruned, change } = pagesAfterDiscovery(existing, found, siteId, at, how);
      for (const url of pruned) this.#db.run('DELETE FROM site_pages WHERE site_id = ? AND url = ?', siteId, url);
      for (const page of pages)
        this.#db.run(
          UPSERT_PAGE,
          siteId,
          page.url,
          page.group,
          page.sampled ? 1 : 0,
          +page.firstSeenAt,
          +page.lastSeenAt,
          page.goneAt === null ? null : +page.goneAt,
        );
      return change;
    });
  }

  async listSitePages(siteId: string): Promise<SitePageRecord[]> {
    return this.#pages(siteId);
  }

  #pages(siteId: string): SitePageRecord[] {
    const rows = this.#db.all('SELECT * FROM site_pages WHERE site_id = ? ORDER BY url', siteId);
    return this.#db.unreadable.parseEach('site page', pageRow, rows);
  }
}

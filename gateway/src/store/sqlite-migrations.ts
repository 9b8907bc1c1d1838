import type { DatabaseSync } from 'node:sqlite';

const NO_BUDGETS = '{"budgets":{},"maxRegression":{}}';

/**
 * The tables. Dates are milliseconds since the epoch (UTC); lists and KPI data are JSON text;
 * Lighthouse results are gzip-compressed JSON, as in the MongoDB store.
 */
const TABLES = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (prefix TEXT PRIMARY KEY, user_id TEXT NOT NULL, digest TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER, expires_at INTEGER);
CREATE TABLE IF NOT EXISTS projects (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, url TEXT NOT NULL, domain TEXT NOT NULL, locations TEXT NOT NULL,
  default_location TEXT NOT NULL, runs INTEGER NOT NULL, schedule TEXT, created_at INTEGER NOT NULL, scheduled_through INTEGER,
  budgets TEXT NOT NULL DEFAULT '${NO_BUDGETS}', auth TEXT,
  UNIQUE (user_id, url));
CREATE TABLE IF NOT EXISTS snapshots (
  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, user_id TEXT NOT NULL, update_id TEXT NOT NULL UNIQUE, url TEXT NOT NULL,
  domain TEXT NOT NULL, date INTEGER NOT NULL, update_type TEXT NOT NULL, available TEXT NOT NULL,
  missing TEXT NOT NULL DEFAULT '[]', kpi_version INTEGER NOT NULL DEFAULT 1, alerts_pending_since INTEGER,
  UNIQUE (project_id, date));
CREATE INDEX IF NOT EXISTS snapshots_by_date ON snapshots (date);
CREATE TABLE IF NOT EXISTS results (
  snapshot_id TEXT NOT NULL, seq INTEGER NOT NULL, device TEXT NOT NULL, location TEXT NOT NULL, median INTEGER NOT NULL,
  runs TEXT NOT NULL, element_count INTEGER, crux TEXT NOT NULL, lighthouse BLOB NOT NULL, checks TEXT,
  PRIMARY KEY (snapshot_id, seq));
CREATE TABLE IF NOT EXISTS kpis (
  snapshot_id TEXT NOT NULL, project_id TEXT NOT NULL, user_id TEXT NOT NULL, date INTEGER NOT NULL, domain TEXT NOT NULL,
  url TEXT NOT NULL, device TEXT NOT NULL, location TEXT NOT NULL, update_type TEXT NOT NULL, section TEXT NOT NULL,
  kpi TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS kpis_for_overview ON kpis (user_id, date, url, device, location, section, kpi);
CREATE INDEX IF NOT EXISTS kpis_by_snapshot ON kpis (snapshot_id);
CREATE TABLE IF NOT EXISTS updates (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, project_id TEXT NOT NULL, url TEXT NOT NULL, devices TEXT NOT NULL,
  locations TEXT NOT NULL, update_type TEXT NOT NULL, status TEXT NOT NULL, date INTEGER, reason TEXT,
  attempts INTEGER NOT NULL, progress TEXT NOT NULL DEFAULT '[]', missing TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  runs INTEGER NOT NULL DEFAULT 1, waiting INTEGER NOT NULL DEFAULT 0, admitted_at INTEGER);
CREATE INDEX IF NOT EXISTS updates_by_status ON updates (status);
CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS slots (id TEXT PRIMARY KEY, kind TEXT NOT NULL, user_id TEXT NOT NULL, expires_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS webhooks (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, target_url TEXT NOT NULL, project_url TEXT, format TEXT NOT NULL,
  secret TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY, webhook_id TEXT NOT NULL, user_id TEXT NOT NULL, event TEXT NOT NULL, body TEXT NOT NULL,
  status TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL, last_error TEXT,
  created_at INTEGER NOT NULL, delivered_at INTEGER);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS deliveries_by_webhook ON deliveries (webhook_id, created_at);
CREATE TABLE IF NOT EXISTS annotations (
  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, date INTEGER NOT NULL, text TEXT NOT NULL, link TEXT, created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS annotations_by_project ON annotations (project_id, date);
`;

/** One step of a file's schema, from the version before it to its own. */
export interface Migration {
  version: number;
  /** What the step adds, for whoever reads the list. */
  adds: string;
  up(db: DatabaseSync): void;
  /** Run at every open, whatever the file's version says: the step checks for what it adds itself. */
  mends?: true;
}

const hasColumn = (db: DatabaseSync, table: string, column: string) =>
  db.prepare('SELECT 1 FROM pragma_table_info(?) WHERE name = ?').get(table, column) !== undefined;

/**
 * The numbered steps a file written by an earlier version takes, in order; a new file gets
 * TABLES, already at the last of them. A new column is a new step here and in TABLES.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 2,
    adds: 'the cells an update could not measure, on snapshots and updates',
    up: (db) => {
      for (const table of ['snapshots', 'updates'])
        db.exec(`ALTER TABLE ${table} ADD COLUMN missing TEXT NOT NULL DEFAULT '[]'`);
    },
  },
  {
    version: 3,
    adds: "each user's backlog of updates, and what they weigh",
    up: (db) =>
      db.exec(
        'ALTER TABLE updates ADD COLUMN runs INTEGER NOT NULL DEFAULT 1; ALTER TABLE updates ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0; ALTER TABLE updates ADD COLUMN admitted_at INTEGER;',
      ),
  },
  {
    version: 4,
    adds: 'budgets on projects, their checks on results',
    up: (db) =>
      db.exec(
        `ALTER TABLE projects ADD COLUMN budgets TEXT NOT NULL DEFAULT '${NO_BUDGETS}'; ALTER TABLE results ADD COLUMN checks TEXT;`,
      ),
  },
  {
    version: 5,
    adds: "the version of each snapshot's KPI records",
    up: (db) => db.exec('ALTER TABLE snapshots ADD COLUMN kpi_version INTEGER NOT NULL DEFAULT 1'),
  },
  {
    version: 6,
    adds: "a project's sealed credentials",
    up: (db) => db.exec('ALTER TABLE projects ADD COLUMN auth TEXT'),
  },
  {
    version: 7,
    adds: 'snapshots whose budget events are not yet in the outbox',
    up: (db) => db.exec('ALTER TABLE snapshots ADD COLUMN alerts_pending_since INTEGER'),
  },
  {
    version: 8,
    adds: 'when a token expires',
    // Added where the column is missing rather than by the version number, so a file is mended
    // whichever migrations ran before it.
    mends: true,
    up: (db) => {
      if (!hasColumn(db, 'tokens', 'expires_at')) db.exec('ALTER TABLE tokens ADD COLUMN expires_at INTEGER');
    },
  },
];

/** The schema this version writes: the last step's. */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

/** Indexes on columns a step adds: made once the steps have run. */
const INDEXES =
  'CREATE INDEX IF NOT EXISTS snapshots_alerts_pending ON snapshots (alerts_pending_since) WHERE alerts_pending_since IS NOT NULL';

/**
 * Brings the file at `path` to SCHEMA_VERSION: its tables if new, each step after its version
 * if older; refuses a file written by a newer perfwatch.
 */
export function migrate(db: DatabaseSync, path: string): void {
  db.exec(TABLES);
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
  const version = row === undefined ? undefined : Number(row.value);
  if (version !== undefined && version > SCHEMA_VERSION)
    throw new Error(
      `${path} was written by a newer perfwatch (schema ${row!.value}; this one knows ${SCHEMA_VERSION})`,
    );
  for (const step of MIGRATIONS) {
    if (step.mends || (version !== undefined && version < step.version)) step.up(db);
  }
  db.exec(INDEXES);
  db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)").run(String(SCHEMA_VERSION));
}

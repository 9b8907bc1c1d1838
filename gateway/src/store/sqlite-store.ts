import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { z } from 'zod';
import { type Budgets, type Device, type KpiRecord, type Location } from '@perfwatch/common';
import { cellReadLater, recordSchemas, storedCell } from './record-schemas.ts';
import { UnreadableRecords } from './unreadable-records.ts';
import { NoFreeSnapshotDate, snapshotDates } from './snapshot-dates.ts';
import {
  announcesEvents,
  DuplicateError,
  fieldHistoryId,
  kpiBatches,
  StoreFull,
  WebhookLimitReached,
} from './store.ts';
// The store contract's types, by their module's name: both stores implement the same one.
import type * as contract from './store.ts';

const SCHEMA_VERSION = 8;
/** Prepared statements kept per store: far more than the SQL texts it runs. */
const MAX_CACHED_STATEMENTS = 200;

const KPI_COLUMNS = [
  'snapshot_id',
  'project_id',
  'user_id',
  'date',
  'domain',
  'url',
  'device',
  'location',
  'update_type',
  'section',
  'kpi',
  'data',
] as const;
/**
 * KPI rows per INSERT: a snapshot's records (about 50 per cell) go in a few statements rather
 * than one each, which was most of the embedded store's share of a snapshot's write at 1,000
 * updates (bench/results.md). 64 rows of 12 values stay far within SQLite's 32,766 parameters.
 */
const KPI_ROWS_PER_INSERT = 64;
const kpiInserts = new Map<number, string>();

function insertKpisSql(rows: number): string {
  let sql = kpiInserts.get(rows);
  if (sql === undefined) {
    const row = `(${KPI_COLUMNS.map(() => '?').join(', ')})`;
    sql = `INSERT INTO kpis (${KPI_COLUMNS.join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')}`;
    kpiInserts.set(rows, sql);
  }
  return sql;
}

/** Where a KPI record belongs: the snapshot, its project and cell, denormalised for the overview. */
interface KpiPlace {
  snapshotId: string;
  projectId: string;
  userId: string;
  date: number;
  domain: string;
  url: string;
  device: Device;
  location: Location;
  updateType: string;
}

/** One KPI row's values, in KPI_COLUMNS' order. */
function kpiRowValues(place: KpiPlace, k: KpiRecord): SQLInputValue[] {
  const { snapshotId, projectId, userId, date, domain, url, device, location, updateType } = place;
  return [
    snapshotId,
    projectId,
    userId,
    date,
    domain,
    url,
    device,
    location,
    updateType,
    k.section,
    k.kpi,
    JSON.stringify(k.data),
  ];
}
const NO_BUDGETS = '{"budgets":{},"maxRegression":{}}';

/**
 * The tables. Dates are milliseconds since the epoch (UTC); lists and KPI data are JSON text;
 * Lighthouse results are gzip-compressed JSON, as in the MongoDB store.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (prefix TEXT PRIMARY KEY, user_id TEXT NOT NULL, digest TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER, expires_at INTEGER);
CREATE TABLE IF NOT EXISTS projects (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, url TEXT NOT NULL, domain TEXT NOT NULL, locations TEXT NOT NULL,
  default_location TEXT NOT NULL, runs INTEGER NOT NULL, schedule TEXT, created_at INTEGER NOT NULL, scheduled_through INTEGER,
  budgets TEXT NOT NULL DEFAULT '{"budgets":{},"maxRegression":{}}', auth TEXT,
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

// Rows read back are parsed like any other input: a file written by another version, or
// edited by hand, fails loudly here instead of deep inside a handler.
const ms = z
  .number()
  .int()
  .transform((value) => new Date(value));
const json = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((text) => JSON.parse(text) as unknown)
    .pipe(schema);
const records = recordSchemas({ id: z.string(), time: ms, structured: json });
const camelCase = (column: string) => column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
const snakeCase = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
/** A row read as its record: its snake_case columns are the record's camelCase fields. */
const asRecord = <T extends z.ZodType>(schema: T) =>
  z.preprocess(
    (row) => Object.fromEntries(Object.entries(row as Record<string, unknown>).map(([k, v]) => [camelCase(k), v])),
    schema,
  );
const userRow = asRecord(records.user);
const tokenRow = asRecord(records.token);
const projectRow = asRecord(records.project);
const scheduledProjectRow = asRecord(records.project.extend({ scheduledThrough: ms.nullable() }));
const webhookRow = asRecord(records.webhook);
const deliveryRow = asRecord(records.delivery);
const annotationRow = asRecord(records.annotation);
const snapshotRow = asRecord(records.snapshot);
const summaryRow = asRecord(records.snapshot.pick({ date: true, updateType: true, available: true }));
const resultBytes = z.instanceof(Uint8Array);
const resultRow = asRecord(records.result.extend({ lighthouse: resultBytes }));
/** A result's row without its bytes, and its place among the snapshot's. */
const cellRow = asRecord(records.result.extend({ seq: z.number().int() }));
const RESULT_COLUMNS_BUT_BYTES = 'seq, device, location, median, runs, element_count, crux, checks';
/** The cells a read asks for. */
const filtered =
  ({ device, locations }: contract.SnapshotFilter) =>
  (r: { device: Device; location: Location }): boolean =>
    (!device || r.device === device) && (!locations?.length || locations.includes(r.location));
// `data` was written by JSON.stringify of an object or a string; it is checked to be one of
// those by its first character and passed on as text (see KpiRow.dataJson in store.ts).
const kpiRow = records.kpi.extend({ dataJson: z.string().regex(/^[{"]/) }) satisfies z.ZodType<contract.KpiRow>;

const updateRow = asRecord(records.update);
const unannouncedRow = asRecord(
  z.object({
    projectId: z.string(),
    userId: z.string(),
    url: z.string(),
    updateId: z.string(),
    date: ms,
    alertsPendingSince: ms,
  }),
).transform(({ alertsPendingSince, ...rest }): contract.UnannouncedSnapshot => ({
  ...rest,
  storedAt: alertsPendingSince,
}));

/** Ids shaped like the MongoDB store's (24 hex digits), so both stores hand out the same kind. */
const newId = () => randomBytes(12).toString('hex');

/** SQLite's primary result code for a full database or disk (SQLITE_FULL). */
const SQLITE_FULL = 13;

/** A failed write's error as the store's: a full disk is StoreFull; anything else is as it was. */
function storeError(error: unknown, path: string): unknown {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && (code & 0xff) === SQLITE_FULL ? new StoreFull(path, { cause: error }) : error;
}

function isUniqueViolation(error: unknown): boolean {
  return (
    (error as { errcode?: number }).errcode === 2067 ||
    (error as { errcode?: number }).errcode === 1555 ||
    /UNIQUE constraint failed/.test((error as Error).message)
  );
}

/**
 * The embedded store of `perfwatch start`: one SQLite file (Node's built-in `node:sqlite`, so
 * nothing to install or compile), same contract and same test suite as the MongoDB store.
 * One process owns the file; a snapshot is written in one transaction, so a crash mid-write
 * leaves nothing half-written.
 */
export class SqliteStore implements contract.Store {
  readonly unreadable = new UnreadableRecords();
  readonly #path: string;
  readonly #synchronous: 'FULL' | 'NORMAL';
  #db: DatabaseSync | null = null;
  readonly #statements = new Map<string, StatementSync>();

  /**
   * `synchronous: 'normal'` gives up durability (see init) and is there for one reason: for
   * bench/sqlite-durability.ts to measure what it costs. Nothing else sets it.
   */
  constructor({ path, synchronous = 'full' }: { path: string; synchronous?: 'full' | 'normal' }) {
    this.#path = path;
    this.#synchronous = synchronous === 'full' ? 'FULL' : 'NORMAL';
  }

  get #conn(): DatabaseSync {
    if (!this.#db) throw new Error('the store is not open (init() first)');
    return this.#db;
  }

  /**
   * The statement for `sql`, prepared once: preparing parses the SQL, which cost more than many
   * of the reads and writes themselves. Only for statements run to their end at once; an
   * iterated one is prepared for its reader alone (running a statement again resets it).
   */
  #prepared(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#conn.prepare(sql);
      // The SQL texts are the code's own (a list's placeholders vary only in number): few.
      if (this.#statements.size < MAX_CACHED_STATEMENTS) this.#statements.set(sql, statement);
    }
    return statement;
  }

  #all(sql: string, ...params: SQLInputValue[]): unknown[] {
    return this.#prepared(sql).all(...params);
  }

  #get(sql: string, ...params: SQLInputValue[]): unknown {
    return this.#prepared(sql).get(...params);
  }

  #run(sql: string, ...params: SQLInputValue[]): { changes: number | bigint } {
    try {
      return this.#prepared(sql).run(...params);
    } catch (error) {
      throw storeError(error, this.#path);
    }
  }

  /** KPI rows (kpiRowValues, one after the other), KPI_ROWS_PER_INSERT to a statement. */
  #insertKpis(values: readonly SQLInputValue[]): void {
    const step = KPI_COLUMNS.length * KPI_ROWS_PER_INSERT;
    for (let at = 0; at < values.length; at += step) {
      const chunk = values.slice(at, at + step);
      this.#run(insertKpisSql(chunk.length / KPI_COLUMNS.length), ...chunk);
    }
  }

  #transaction<T>(work: () => T): T {
    this.#conn.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.#conn.exec('COMMIT');
      return result;
    } catch (error) {
      // On a full disk (and other I/O errors) SQLite has already rolled the transaction back:
      // a ROLLBACK then throws "no transaction is active", which hid why the write failed.
      if (this.#conn.isTransaction) this.#conn.exec('ROLLBACK');
      throw storeError(error, this.#path);
    }
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
    db.exec(SCHEMA);
    const version = db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
    if (version && Number(version.value) > SCHEMA_VERSION) {
      db.close();
      throw new Error(
        `${this.#path} was written by a newer perfwatch (schema ${version.value}; this one knows ${SCHEMA_VERSION})`,
      );
    }
    // Schema 2: the cells an update could not measure, on snapshots and updates.
    if (version && Number(version.value) < 2) {
      for (const table of ['snapshots', 'updates'])
        db.exec(`ALTER TABLE ${table} ADD COLUMN missing TEXT NOT NULL DEFAULT '[]'`);
    }
    // Schema 3: each user's backlog of updates, and what they weigh.
    if (version && Number(version.value) < 3) {
      db.exec(
        'ALTER TABLE updates ADD COLUMN runs INTEGER NOT NULL DEFAULT 1; ALTER TABLE updates ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0; ALTER TABLE updates ADD COLUMN admitted_at INTEGER;',
      );
    }
    // Schema 4: budgets on projects, their checks on results.
    if (version && Number(version.value) < 4) {
      db.exec(
        `ALTER TABLE projects ADD COLUMN budgets TEXT NOT NULL DEFAULT '${NO_BUDGETS}'; ALTER TABLE results ADD COLUMN checks TEXT;`,
      );
    }
    // Schema 5: the version of each snapshot's KPI records.
    if (version && Number(version.value) < 5)
      db.exec('ALTER TABLE snapshots ADD COLUMN kpi_version INTEGER NOT NULL DEFAULT 1');
    // Schema 6: a project's sealed credentials.
    if (version && Number(version.value) < 6) db.exec('ALTER TABLE projects ADD COLUMN auth TEXT');
    // Schema 7: snapshots whose budget events are not yet in the outbox (its index needs the column first).
    if (version && Number(version.value) < 7) db.exec('ALTER TABLE snapshots ADD COLUMN alerts_pending_since INTEGER');
    db.exec(
      'CREATE INDEX IF NOT EXISTS snapshots_alerts_pending ON snapshots (alerts_pending_since) WHERE alerts_pending_since IS NOT NULL',
    );
    // Schema 8: when a token expires. Added where the column is missing rather than by the version
    // number, so a file is mended whichever migrations ran before it.
    if (!db.prepare('SELECT 1 FROM pragma_table_info(?) WHERE name = ?').get('tokens', 'expires_at'))
      db.exec('ALTER TABLE tokens ADD COLUMN expires_at INTEGER');
    db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)").run(String(SCHEMA_VERSION));
    this.#db = db;
  }

  async close(): Promise<void> {
    this.#statements.clear();
    this.#db?.close();
    this.#db = null;
  }

  async ping(): Promise<void> {
    this.#get('SELECT 1');
  }

  async createUser(name: string): Promise<contract.UserRecord> {
    const user = { id: newId(), name, createdAt: new Date() };
    try {
      this.#run('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)', user.id, name, user.createdAt.getTime());
    } catch (error) {
      throw isUniqueViolation(error) ? new DuplicateError(`user ${JSON.stringify(name)} exists`) : error;
    }
    return user;
  }

  async findUserByName(name: string): Promise<contract.UserRecord | null> {
    const row = this.#get('SELECT * FROM users WHERE name = ?', name);
    return row ? userRow.parse(row) : null;
  }

  async listUsers(): Promise<contract.UserRecord[]> {
    return this.unreadable.parseEach('user', userRow, this.#all('SELECT * FROM users ORDER BY name'));
  }

  async addToken({ prefix, userId, digest, expiresAt }: contract.NewToken): Promise<void> {
    try {
      this.#run(
        'INSERT INTO tokens (prefix, user_id, digest, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
        prefix,
        userId,
        digest,
        Date.now(),
        expiresAt?.getTime() ?? null,
      );
    } catch (error) {
      throw isUniqueViolation(error) ? new DuplicateError(`token prefix ${prefix} exists`) : error;
    }
  }

  async findToken(prefix: string): Promise<contract.TokenRecord | null> {
    const row = this.#get('SELECT * FROM tokens WHERE prefix = ?', prefix);
    return row ? tokenRow.parse(row) : null;
  }

  async listTokens(userId: string): Promise<contract.TokenRecord[]> {
    return this.unreadable.parseEach(
      'token',
      tokenRow,
      this.#all('SELECT * FROM tokens WHERE user_id = ? ORDER BY created_at, prefix', userId),
    );
  }

  async revokeToken(prefix: string): Promise<boolean> {
    return (
      Number(
        this.#run('UPDATE tokens SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL', Date.now(), prefix)
          .changes,
      ) === 1
    );
  }

  async addProject(project: contract.NewProject): Promise<contract.ProjectRecord> {
    const record: contract.ProjectRecord = {
      ...project,
      locations: [...project.locations],
      budgets: project.budgets ?? { budgets: {}, maxRegression: {} },
      auth: project.auth ?? null,
      id: newId(),
      createdAt: new Date(),
    };
    try {
      this.#run(
        'INSERT INTO projects (id, user_id, url, domain, locations, default_location, runs, schedule, created_at, budgets, auth) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        record.id,
        record.userId,
        record.url,
        record.domain,
        JSON.stringify(record.locations),
        record.defaultLocation,
        record.runs,
        record.schedule,
        record.createdAt.getTime(),
        JSON.stringify(record.budgets),
        record.auth,
      );
    } catch (error) {
      throw isUniqueViolation(error) ? new DuplicateError(`project ${project.url} exists for this user`) : error;
    }
    return record;
  }

  async findProject(userId: string, url: string): Promise<contract.ProjectRecord | null> {
    const row = this.#get('SELECT * FROM projects WHERE user_id = ? AND url = ?', userId, url);
    return row ? projectRow.parse(row) : null;
  }

  async listProjects(userId?: string): Promise<contract.ProjectRecord[]> {
    const rows = userId
      ? this.#all('SELECT * FROM projects WHERE user_id = ? ORDER BY url', userId)
      : this.#all('SELECT * FROM projects ORDER BY url');
    return this.unreadable.parseEach('project', projectRow, rows);
  }

  async removeProject(userId: string, url: string): Promise<boolean> {
    const project = await this.findProject(userId, url);
    if (!project) return false;
    this.#transaction(() => {
      this.#run('DELETE FROM kpis WHERE project_id = ?', project.id);
      this.#run('DELETE FROM results WHERE snapshot_id IN (SELECT id FROM snapshots WHERE project_id = ?)', project.id);
      this.#run('DELETE FROM snapshots WHERE project_id = ?', project.id);
      this.#run('DELETE FROM annotations WHERE project_id = ?', project.id);
      this.#run('DELETE FROM projects WHERE id = ?', project.id);
    });
    return true;
  }

  async setProjectBudgets(projectId: string, budgets: Budgets): Promise<void> {
    this.#run('UPDATE projects SET budgets = ? WHERE id = ?', JSON.stringify(budgets), projectId);
  }

  async setProjectAuth(projectId: string, sealed: string | null): Promise<void> {
    this.#run('UPDATE projects SET auth = ? WHERE id = ?', sealed, projectId);
  }

  async replaceProjectAuth(projectId: string, expected: string, sealed: string): Promise<boolean> {
    return (
      Number(
        this.#run('UPDATE projects SET auth = ? WHERE id = ? AND auth = ?', sealed, projectId, expected).changes,
      ) === 1
    );
  }

  /** A record written as a row: its fields in their snake_case columns, its times as milliseconds. */
  #insertRecord(table: 'webhooks' | 'annotations', record: object): void {
    const entries = Object.entries(record);
    const columns = entries.map(([field]) => snakeCase(field));
    this.#run(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      ...entries.map(([, value]) => (value instanceof Date ? value.getTime() : value) as SQLInputValue),
    );
  }

  async addWebhook(webhook: contract.NewWebhook, maxPerUser = Infinity): Promise<contract.WebhookRecord> {
    const record: contract.WebhookRecord = { ...webhook, id: newId(), createdAt: new Date() };
    // Counted and written in one transaction: the file has one writer at a time.
    this.#transaction(() => {
      const { held } = this.#get('SELECT COUNT(*) AS held FROM webhooks WHERE user_id = ?', webhook.userId) as {
        held: number;
      };
      if (held >= maxPerUser) throw new WebhookLimitReached(maxPerUser);
      this.#insertRecord('webhooks', record);
    });
    return record;
  }

  async findWebhook(id: string): Promise<contract.WebhookRecord | null> {
    const row = this.#get('SELECT * FROM webhooks WHERE id = ?', id);
    return row ? webhookRow.parse(row) : null;
  }

  async setWebhookSecret(id: string, secret: string): Promise<void> {
    this.#run('UPDATE webhooks SET secret = ? WHERE id = ?', secret, id);
  }

  async listWebhooks(userId: string): Promise<contract.WebhookRecord[]> {
    return this.unreadable.parseEach(
      'webhook',
      webhookRow,
      this.#all('SELECT * FROM webhooks WHERE user_id = ? ORDER BY created_at, id', userId),
    );
  }

  async removeWebhook(userId: string, id: string): Promise<boolean> {
    return this.#transaction(() => {
      const removed = Number(this.#run('DELETE FROM webhooks WHERE id = ? AND user_id = ?', id, userId).changes) === 1;
      if (removed) this.#run('DELETE FROM deliveries WHERE webhook_id = ?', id);
      return removed;
    });
  }

  async enqueueDeliveries(deliveries: readonly contract.NewDelivery[]): Promise<void> {
    const insert = this.#prepared(
      "INSERT INTO deliveries (id, webhook_id, user_id, event, body, status, attempts, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT (id) DO NOTHING",
    );
    this.#transaction(() => {
      for (const d of deliveries)
        insert.run(d.id, d.webhookId, d.userId, d.event, d.body, d.createdAt.getTime(), d.createdAt.getTime());
    });
  }

  async claimDeliveries(
    now: Date,
    limit: number,
    leaseMs: number,
    exceptUsers: readonly string[] = [],
  ): Promise<contract.DeliveryRecord[]> {
    // The users left out as one JSON array: one statement text whatever their number.
    return this.#all(
      "UPDATE deliveries SET next_attempt_at = ? WHERE id IN (SELECT id FROM deliveries WHERE status = 'pending' AND next_attempt_at <= ? AND user_id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at LIMIT ?) RETURNING *",
      now.getTime() + leaseMs,
      now.getTime(),
      JSON.stringify(exceptUsers),
      limit,
    ).map((row) => deliveryRow.parse(row));
  }

  async recordDeliveryAttempt(id: string, attempt: contract.DeliveryAttempt): Promise<void> {
    if (attempt.status === 'delivered')
      this.#run(
        "UPDATE deliveries SET status = 'delivered', attempts = attempts + 1, delivered_at = ?, last_error = NULL WHERE id = ?",
        attempt.at.getTime(),
        id,
      );
    else if (attempt.status === 'pending')
      this.#run(
        'UPDATE deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?',
        attempt.nextAttemptAt.getTime(),
        attempt.error,
        id,
      );
    else
      this.#run(
        "UPDATE deliveries SET status = 'failed', attempts = attempts + 1, last_error = ? WHERE id = ?",
        attempt.error,
        id,
      );
  }

  async listDeliveries(webhookId: string, limit: number): Promise<contract.DeliveryRecord[]> {
    return this.unreadable.parseEach(
      'delivery',
      deliveryRow,
      this.#all(
        'SELECT * FROM deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id DESC LIMIT ?',
        webhookId,
        limit,
      ),
    );
  }

  async deleteDeliveriesBefore(before: Date): Promise<number> {
    return Number(
      this.#run("DELETE FROM deliveries WHERE status != 'pending' AND created_at < ?", before.getTime()).changes,
    );
  }

  async addAnnotation(annotation: contract.NewAnnotation): Promise<contract.AnnotationRecord> {
    const record: contract.AnnotationRecord = { ...annotation, id: newId(), createdAt: new Date() };
    this.#insertRecord('annotations', record);
    return record;
  }

  async listAnnotations(
    projectId: string,
    range: { from?: Date; to?: Date; limit?: number } = {},
  ): Promise<contract.AnnotationRecord[]> {
    const bounds = [projectId, range.from?.getTime() ?? 0, range.to?.getTime() ?? Number.MAX_SAFE_INTEGER] as const;
    const rows =
      range.limit === undefined
        ? this.#all(
            'SELECT * FROM annotations WHERE project_id = ? AND date >= ? AND date < ? ORDER BY date, created_at',
            ...bounds,
          )
        : this.#all(
            'SELECT * FROM annotations WHERE project_id = ? AND date >= ? AND date < ? ORDER BY date DESC, created_at DESC LIMIT ?',
            ...bounds,
            range.limit,
          ).reverse();
    return this.unreadable.parseEach('annotation', annotationRow, rows);
  }

  async countAnnotations(projectId: string): Promise<number> {
    return (this.#get('SELECT count(*) AS n FROM annotations WHERE project_id = ?', projectId) as { n: number }).n;
  }

  async removeAnnotation(projectId: string, id: string): Promise<boolean> {
    return Number(this.#run('DELETE FROM annotations WHERE id = ? AND project_id = ?', id, projectId).changes) === 1;
  }

  async deleteAnnotationsBefore(before: Date): Promise<number> {
    return Number(this.#run('DELETE FROM annotations WHERE date < ?', before.getTime()).changes);
  }

  async deleteFinishedUpdatesBefore(before: Date): Promise<number> {
    return Number(
      this.#run("DELETE FROM updates WHERE status IN ('done', 'failed') AND updated_at < ?", before.getTime()).changes,
    );
  }

  async saveSnapshot({
    project,
    updateId,
    date,
    updateType,
    results,
    missing,
    kpiVersion = 1,
  }: contract.NewSnapshot): Promise<Date> {
    // Compressed before the transaction: the write itself then takes milliseconds.
    const compressed = await Promise.all(results.map((r) => r.lighthouse.gzip()));
    return this.#transaction(() => {
      // Idempotent per update: a second save of the same update returns the first one's date.
      const earlier = this.#get('SELECT date FROM snapshots WHERE update_id = ?', updateId) as
        { date: number } | undefined;
      if (earlier) return new Date(earlier.date);
      const stored = this.#freeDate(project, date);
      const snapshotId = newId();
      this.#run(
        'INSERT INTO snapshots (id, project_id, user_id, update_id, url, domain, date, update_type, available, missing, kpi_version, alerts_pending_since) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        snapshotId,
        project.id,
        project.userId,
        updateId,
        project.url,
        project.domain,
        stored.getTime(),
        updateType,
        JSON.stringify(results.map(({ device, location }) => ({ device, location }))),
        JSON.stringify(missing ?? []),
        kpiVersion,
        // Its budget events are owed in the same transaction; the outbox write that follows settles them.
        announcesEvents(results) ? Date.now() : null,
      );
      this.#insertCells(
        {
          snapshotId,
          projectId: project.id,
          userId: project.userId,
          date: stored.getTime(),
          domain: project.domain,
          url: project.url,
          updateType,
        },
        results,
        compressed,
      );
      return stored;
    });
  }

  /** A snapshot's results (their results compressed as `compressed`, in order) and their KPI records. */
  #insertCells(
    snapshot: Omit<KpiPlace, 'device' | 'location'>,
    results: contract.NewSnapshot['results'],
    compressed: readonly Buffer[],
  ): void {
    const insertResult = this.#prepared(
      'INSERT INTO results (snapshot_id, seq, device, location, median, runs, element_count, crux, lighthouse, checks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const kpis: SQLInputValue[] = [];
    results.forEach((r, seq) => {
      insertResult.run(
        snapshot.snapshotId,
        seq,
        r.device,
        r.location,
        r.median,
        JSON.stringify(r.runs),
        r.elementCount,
        JSON.stringify(r.crux),
        compressed[seq]!,
        r.checks ? JSON.stringify(r.checks) : null,
      );
      const place = { ...snapshot, device: r.device, location: r.location };
      for (const k of r.kpis) kpis.push(...kpiRowValues(place, k));
    });
    this.#insertKpis(kpis);
  }

  /** The first of the snapshot's dates (snapshotDates) its project has no snapshot at. */
  #freeDate(project: contract.ProjectRecord, date: Date): Date {
    for (const candidate of snapshotDates(date))
      if (!this.#get('SELECT 1 FROM snapshots WHERE project_id = ? AND date = ?', project.id, candidate.getTime()))
        return candidate;
    throw new NoFreeSnapshotDate(project.url, date);
  }

  async listSnapshotsBelowKpiVersion(
    version: number,
    limit: number,
  ): Promise<Array<{ projectId: string; date: Date }>> {
    return (
      this.#all(
        'SELECT project_id, date FROM snapshots WHERE kpi_version < ? ORDER BY date LIMIT ?',
        version,
        limit,
      ) as Array<{ project_id: string; date: number }>
    ).map((r) => ({ projectId: r.project_id, date: new Date(r.date) }));
  }

  async replaceSnapshotKpis(
    { projectId, date }: { projectId: string; date: Date },
    { sections, results, version }: contract.KpiReplacement,
  ): Promise<void> {
    this.#transaction(() => {
      const snapshot = this.#get(
        'SELECT * FROM snapshots WHERE project_id = ? AND date = ?',
        projectId,
        date.getTime(),
      );
      if (!snapshot) return;
      const row = snapshotRow.parse(snapshot);
      const { user_id: userId, domain } = snapshot as { user_id: string; domain: string };
      this.#run(
        `DELETE FROM kpis WHERE snapshot_id = ? AND section IN (${sections.map(() => '?').join(', ')})`,
        row.id,
        ...sections,
      );
      const kpis: SQLInputValue[] = [];
      for (const r of results) {
        const place = {
          snapshotId: row.id,
          projectId,
          userId,
          date: row.date.getTime(),
          domain,
          url: row.url,
          device: r.device,
          location: r.location,
          updateType: row.updateType,
        };
        for (const k of r.kpis) kpis.push(...kpiRowValues(place, k));
      }
      this.#insertKpis(kpis);
      this.#run('UPDATE snapshots SET kpi_version = ? WHERE id = ?', version, row.id);
    });
  }

  async saveFieldHistory(
    project: contract.ProjectRecord,
    rows: ReadonlyArray<{ date: Date; device: Device; kpis: readonly KpiRecord[] }>,
  ): Promise<void> {
    const id = fieldHistoryId(project.id);
    this.#transaction(() => {
      this.#run('DELETE FROM kpis WHERE snapshot_id = ?', id);
      const kpis: SQLInputValue[] = [];
      for (const row of rows) {
        const place = {
          snapshotId: id,
          projectId: project.id,
          userId: project.userId,
          date: row.date.getTime(),
          domain: project.domain,
          url: project.url,
          device: row.device,
          location: project.defaultLocation,
          updateType: 'scheduled' as const,
        };
        for (const k of row.kpis) kpis.push(...kpiRowValues(place, k));
      }
      this.#insertKpis(kpis);
    });
  }

  async deleteOrphans(_olderThan: Date): Promise<number> {
    // A snapshot and its records are written in one transaction: orphans come only from a file
    // edited by hand or an interrupted deletion of an earlier version.
    return this.#transaction(() => {
      const kpis = this.#run(
        "DELETE FROM kpis WHERE snapshot_id NOT IN (SELECT id FROM snapshots) AND snapshot_id NOT LIKE 'history:%'",
      );
      const results = this.#run('DELETE FROM results WHERE snapshot_id NOT IN (SELECT id FROM snapshots)');
      return Number(kpis.changes) + Number(results.changes);
    });
  }

  async findSnapshot(
    projectId: string,
    date: Date,
    filter: contract.SnapshotFilter = {},
  ): Promise<contract.SnapshotRecord | null> {
    const raw = this.#get('SELECT * FROM snapshots WHERE project_id = ? AND date = ?', projectId, date.getTime());
    if (!raw) return null;
    const snapshot = snapshotRow.parse(raw);
    const rows = this.#all('SELECT * FROM results WHERE snapshot_id = ? ORDER BY seq', snapshot.id).map((row) =>
      resultRow.parse(row),
    );
    const results = rows.filter(filtered(filter)).map(({ lighthouse, ...r }) => storedCell(r, lighthouse));
    return { ...snapshot, results };
  }

  async findSnapshotCells(
    projectId: string,
    date: Date,
    filter: contract.SnapshotFilter = {},
  ): Promise<contract.SnapshotCells | null> {
    const raw = this.#get('SELECT * FROM snapshots WHERE project_id = ? AND date = ?', projectId, date.getTime());
    if (!raw) return null;
    const snapshot = snapshotRow.parse(raw);
    const rows = this.#all(
      `SELECT ${RESULT_COLUMNS_BUT_BYTES} FROM results WHERE snapshot_id = ? ORDER BY seq`,
      snapshot.id,
    ).map((row) => cellRow.parse(row));
    const results = rows.filter(filtered(filter)).map(({ seq, ...r }) =>
      cellReadLater(r, async () => {
        const stored = this.#get('SELECT lighthouse FROM results WHERE snapshot_id = ? AND seq = ?', snapshot.id, seq);
        // Deleted since (retention, a removed project): the reader's answer cannot be whole.
        if (!stored) throw new Error('the result is no longer stored');
        return resultBytes.parse((stored as { lighthouse: unknown }).lighthouse);
      }),
    );
    return { ...snapshot, results };
  }

  async listUnannouncedSnapshots(storedBefore: Date, limit: number): Promise<contract.UnannouncedSnapshot[]> {
    return this.#all(
      'SELECT project_id, user_id, url, update_id, date, alerts_pending_since FROM snapshots WHERE alerts_pending_since <= ? ORDER BY alerts_pending_since LIMIT ?',
      storedBefore.getTime(),
      limit,
    ).map((row) => unannouncedRow.parse(row));
  }

  async markSnapshotAnnounced(updateId: string): Promise<void> {
    this.#run('UPDATE snapshots SET alerts_pending_since = NULL WHERE update_id = ?', updateId);
  }

  async findSnapshotOfUpdate(updateId: string): Promise<{ date: Date; missing: contract.MissingCell[] } | null> {
    // A snapshot row exists only once its transaction committed: it is complete.
    const raw = this.#get('SELECT * FROM snapshots WHERE update_id = ?', updateId);
    if (!raw) return null;
    const { date, missing } = snapshotRow.parse(raw);
    return { date, missing };
  }

  async listSnapshots(projectId: string, page?: contract.SnapshotPage): Promise<contract.SnapshotSummary[]> {
    const rows = page
      ? this.#all(
          'SELECT * FROM snapshots WHERE project_id = ? AND date < ? ORDER BY date DESC LIMIT ?',
          projectId,
          page.before?.getTime() ?? Number.MAX_SAFE_INTEGER,
          page.limit,
        ).reverse()
      : this.#all('SELECT * FROM snapshots WHERE project_id = ? ORDER BY date', projectId);
    return this.unreadable.parseEach('snapshot', summaryRow, rows);
  }

  async *streamKpis(filter: contract.OverviewFilter): AsyncIterable<readonly contract.KpiRow[]> {
    const { userId, from, to, domain, updateType, sections } = filter;
    const where = ['user_id = ?', 'date >= ?', 'date < ?'];
    const params: SQLInputValue[] = [userId, from.getTime(), to.getTime()];
    const add = (clause: string, ...values: SQLInputValue[]) => {
      where.push(clause);
      params.push(...values);
    };
    if (domain) add('domain = ?', domain);
    if (updateType) add('update_type = ?', updateType);
    if (sections && sections.length > 0) add(`section IN (${sections.map(() => '?').join(', ')})`, ...sections);
    const rows = this.#conn
      .prepare(
        `SELECT date, domain, url, device, location, update_type AS updateType, section, kpi, data AS dataJson FROM kpis WHERE ${where.join(' AND ')} ORDER BY date, url, device, location, section, kpi`,
      )
      .iterate(...params);
    // Batch by batch from the statement: memory stays flat however many records match.
    yield* kpiBatches(rows, (row) => kpiRow.parse(row));
  }

  async deleteSnapshotsBefore(before: Date, limit: number): Promise<number> {
    const old = this.#all('SELECT id FROM snapshots WHERE date < ? LIMIT ?', before.getTime(), limit) as Array<{
      id: string;
    }>;
    for (const { id } of old) {
      this.#transaction(() => {
        this.#run('DELETE FROM kpis WHERE snapshot_id = ?', id);
        this.#run('DELETE FROM results WHERE snapshot_id = ?', id);
        this.#run('DELETE FROM snapshots WHERE id = ?', id);
      });
    }
    return old.length;
  }

  async createUpdate(update: contract.NewUpdate): Promise<void> {
    const now = Date.now();
    try {
      this.#run(
        "INSERT INTO updates (id, user_id, project_id, url, devices, locations, update_type, status, attempts, runs, waiting, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, 1, ?, ?)",
        update.id,
        update.userId,
        update.projectId,
        update.url,
        JSON.stringify(update.devices),
        JSON.stringify(update.locations),
        update.updateType,
        update.runs,
        now,
        now,
      );
    } catch (error) {
      throw isUniqueViolation(error) ? new DuplicateError(`update ${update.id} exists`) : error;
    }
  }

  async setUpdateState(id: string, state: contract.UpdateState): Promise<void> {
    const sets = ['status = ?', 'updated_at = ?'];
    const params: SQLInputValue[] = [state.status, Date.now()];
    if (state.status === 'done') {
      sets.push('date = ?', 'missing = ?');
      params.push(state.date.getTime(), JSON.stringify(state.missing ?? []));
    }
    if (state.reason !== undefined) {
      sets.push('reason = ?');
      params.push(state.reason);
    }
    if (state.status === 'running') sets.push('attempts = attempts + 1');
    // `done` is final: a late word from an earlier delivery must not undo it.
    const unless =
      state.status === 'done'
        ? ''
        : state.status === 'failed'
          ? " AND status <> 'done'"
          : " AND status NOT IN ('done', 'failed')";
    this.#run(`UPDATE updates SET ${sets.join(', ')} WHERE id = ?${unless}`, ...params, id);
  }

  async setUpdateProgress(id: string, progress: readonly contract.UpdateProgress[]): Promise<void> {
    this.#run(
      "UPDATE updates SET progress = ?, updated_at = ? WHERE id = ? AND status <> 'done'",
      JSON.stringify(progress),
      Date.now(),
      id,
    );
  }

  async findUpdate(userId: string, id: string): Promise<contract.UpdateRecord | null> {
    const row = this.#get('SELECT * FROM updates WHERE id = ? AND user_id = ?', id, userId);
    return row ? updateRow.parse(row) : null;
  }

  async countPendingUpdates(location: Location): Promise<number> {
    const row = this.#get(
      "SELECT count(*) AS n FROM updates WHERE status IN ('queued', 'running') AND waiting = 0 AND EXISTS (SELECT 1 FROM json_each(updates.locations) WHERE value = ?)",
      location,
    ) as { n: number };
    return row.n;
  }

  async listUnfinishedUpdates(): Promise<contract.UpdateRecord[]> {
    const rows = this.#all("SELECT * FROM updates WHERE status IN ('queued', 'running') ORDER BY created_at");
    return this.unreadable.parseEach('update', updateRow, rows);
  }

  async userBacklog(userId: string): Promise<{ updates: number; runs: number }> {
    const row = this.#get(
      "SELECT count(*) AS updates, coalesce(sum(json_array_length(devices) * json_array_length(locations) * runs), 0) AS runs FROM updates WHERE user_id = ? AND status IN ('queued', 'running')",
      userId,
    ) as { updates: number; runs: number };
    return { updates: row.updates, runs: row.runs };
  }

  async admitUpdates(userId: string, limit: number): Promise<contract.UpdateRecord[]> {
    // One statement: this process is the file's only writer, and SQLite runs it whole.
    const now = Date.now();
    return (
      this.#all(
        `UPDATE updates SET waiting = 0, admitted_at = ?, updated_at = ? WHERE id IN (
         SELECT id FROM updates WHERE user_id = ? AND status = 'queued' AND waiting = 1 ORDER BY created_at, rowid
         LIMIT max(0, ? - (SELECT count(*) FROM updates WHERE user_id = ? AND status IN ('queued', 'running') AND waiting = 0)))
       RETURNING rowid AS seq, *`,
        now,
        now,
        userId,
        limit,
        userId,
      )
        // RETURNING's order is SQLite's to choose: back to the backlog's (arrival) order.
        .map((row) => ({ seq: (row as { seq: number }).seq, update: updateRow.parse(row) }))
        .sort((a, b) => a.update.createdAt.getTime() - b.update.createdAt.getTime() || a.seq - b.seq)
        .map((r) => r.update)
    );
  }

  async claimSlot(kind: string, userId: string, limit: number, ttlMs: number): Promise<string | null> {
    const now = Date.now();
    this.#run('DELETE FROM slots WHERE expires_at < ?', now);
    const id = newId();
    const taken = this.#run(
      'INSERT INTO slots (id, kind, user_id, expires_at) SELECT ?, ?, ?, ? WHERE (SELECT count(*) FROM slots WHERE kind = ? AND user_id = ?) < ?',
      id,
      kind,
      userId,
      now + ttlMs,
      kind,
      userId,
      limit,
    ).changes;
    return Number(taken) === 1 ? id : null;
  }

  async releaseSlot(id: string): Promise<void> {
    this.#run('DELETE FROM slots WHERE id = ?', id);
  }

  async readNote(key: string): Promise<string | null> {
    const row = this.#get('SELECT value FROM meta WHERE key = ?', `note:${key}`) as { value: string } | undefined;
    return row ? row.value : null;
  }

  async writeNote(key: string, value: string): Promise<void> {
    this.#run(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      `note:${key}`,
      value,
    );
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const changed = this.#run(
      'INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE leases.holder = excluded.holder OR leases.expires_at < ?',
      name,
      holder,
      now + ttlMs,
      now,
    ).changes;
    return Number(changed) === 1;
  }

  async listScheduledProjects(): Promise<Array<contract.ProjectRecord & { scheduledThrough: Date | null }>> {
    return this.unreadable
      .parseEach('project', scheduledProjectRow, this.#all('SELECT * FROM projects WHERE schedule IS NOT NULL'))
      .map(({ scheduledThrough, ...project }) => ({ ...project, scheduledThrough }));
  }

  async markScheduled(projectId: string, tick: Date): Promise<void> {
    this.#run(
      'UPDATE projects SET scheduled_through = ? WHERE id = ? AND (scheduled_through IS NULL OR scheduled_through < ?)',
      tick.getTime(),
      projectId,
      tick.getTime(),
    );
  }
}

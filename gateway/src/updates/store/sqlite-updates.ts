import type { SQLInputValue } from 'node:sqlite';
import type { Location, UpdateProgress } from '@perfwatch/common';
import {
  asRecord,
  duplicateOr,
  newId,
  placeholders,
  sqliteForms,
  type SqliteDatabase,
} from '../../store/sqlite-database.ts';
import { addColumns, type SqliteSchema } from '../../store/sqlite-migrations.ts';
import {
  admissionRoom,
  FINISHED,
  runsHeld,
  statusesKeptAgainst,
  UNFINISHED,
  updateRecords,
  type NewUpdate,
  type UpdateRecord,
  type UpdateState,
  type UpdatesStore,
} from './updates-store.ts';

/**
 * The `updates` table, and the places of sync updates in flight in `slots`: deployed stores have
 * the table by that name (renaming it would need a data migration).
 */
export const updatesSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS updates (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, project_id TEXT NOT NULL, url TEXT NOT NULL, devices TEXT NOT NULL,
  locations TEXT NOT NULL, update_type TEXT NOT NULL, status TEXT NOT NULL, date INTEGER, reason TEXT,
  attempts INTEGER NOT NULL, progress TEXT NOT NULL DEFAULT '[]', missing TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  runs INTEGER NOT NULL DEFAULT 1, waiting INTEGER NOT NULL DEFAULT 0, admitted_at INTEGER, revision TEXT);
CREATE INDEX IF NOT EXISTS updates_by_status ON updates (status);
CREATE TABLE IF NOT EXISTS slots (id TEXT PRIMARY KEY, kind TEXT NOT NULL, user_id TEXT NOT NULL, expires_at INTEGER NOT NULL);`,
  steps: [
    {
      version: 2,
      adds: 'the cells an update could not measure',
      up: addColumns('updates', "missing TEXT NOT NULL DEFAULT '[]'"),
    },
    {
      version: 3,
      adds: "each user's backlog of updates, and what they weigh",
      up: addColumns(
        'updates',
        'runs INTEGER NOT NULL DEFAULT 1',
        'waiting INTEGER NOT NULL DEFAULT 0',
        'admitted_at INTEGER',
      ),
    },
    { version: 9, adds: 'the code change an update measures (JSON)', up: addColumns('updates', 'revision TEXT') },
  ],
};

const updateRow = asRecord(updateRecords(sqliteForms).update);
/** `status IN (…)` of `statuses`: the shared lists as SQL (their values are the code's own). */
const statusIn = (statuses: readonly string[]) => `status IN (${statuses.map((s) => `'${s}'`).join(', ')})`;
const UNFINISHED_ROWS = statusIn(UNFINISHED);

/** Updates in SQLite (the `updates` table) and the places of sync updates in flight (`slots`). */
export class SqliteUpdates implements UpdatesStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async createUpdate(update: NewUpdate): Promise<void> {
    const now = Date.now();
    try {
      this.#db.run(
        "INSERT INTO updates (id, user_id, project_id, url, devices, locations, update_type, status, attempts, runs, waiting, created_at, updated_at, revision) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, 1, ?, ?, ?)",
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
        update.revision ? JSON.stringify(update.revision) : null,
      );
    } catch (error) {
      throw duplicateOr(error, `update ${update.id} exists`);
    }
  }

  async setUpdateState(id: string, state: UpdateState): Promise<void> {
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
    const kept = statusesKeptAgainst(state);
    const unless = kept.length === 0 ? '' : ` AND status NOT IN (${placeholders(kept)})`;
    this.#db.run(`UPDATE updates SET ${sets.join(', ')} WHERE id = ?${unless}`, ...params, id, ...kept);
  }

  async setUpdateProgress(id: string, progress: readonly UpdateProgress[]): Promise<void> {
    this.#db.run(
      "UPDATE updates SET progress = ?, updated_at = ? WHERE id = ? AND status <> 'done'",
      JSON.stringify(progress),
      Date.now(),
      id,
    );
  }

  async findUpdate(userId: string, id: string): Promise<UpdateRecord | null> {
    const row = this.#db.get('SELECT * FROM updates WHERE id = ? AND user_id = ?', id, userId);
    return row ? updateRow.parse(row) : null;
  }

  async countPendingUpdates(location: Location): Promise<number> {
    const row = this.#db.get(
      `SELECT count(*) AS n FROM updates WHERE ${UNFINISHED_ROWS} AND waiting = 0 AND EXISTS (SELECT 1 FROM json_each(updates.locations) WHERE value = ?)`,
      location,
    ) as { n: number };
    return row.n;
  }

  async listUnfinishedUpdates(): Promise<UpdateRecord[]> {
    const rows = this.#db.all(`SELECT * FROM updates WHERE ${UNFINISHED_ROWS} ORDER BY created_at`);
    return this.#db.unreadable.parseEach('update', updateRow, rows);
  }

  async userBacklog(userId: string): Promise<{ updates: number; runs: number }> {
    const rows = this.#db.all(
      `SELECT json_array_length(devices) AS devices, json_array_length(locations) AS locations, runs FROM updates WHERE user_id = ? AND ${UNFINISHED_ROWS}`,
      userId,
    ) as Array<{ devices: number; locations: number; runs: number }>;
    return { updates: rows.length, runs: rows.reduce((sum, r) => sum + runsHeld(r.devices, r.locations, r.runs), 0) };
  }

  async admitUpdates(userId: string, limit: number): Promise<UpdateRecord[]> {
    // Counted and admitted in one transaction: this process is the file's only writer.
    const admitted = this.#db.transaction(() => {
      const { active } = this.#db.get(
        `SELECT count(*) AS active FROM updates WHERE user_id = ? AND ${UNFINISHED_ROWS} AND waiting = 0`,
        userId,
      ) as { active: number };
      const room = admissionRoom(limit, active);
      if (room === 0) return [];
      const now = Date.now();
      return this.#db.all(
        `UPDATE updates SET waiting = 0, admitted_at = ?, updated_at = ? WHERE id IN (
         SELECT id FROM updates WHERE user_id = ? AND status = 'queued' AND waiting = 1 ORDER BY created_at, rowid LIMIT ?)
       RETURNING rowid AS seq, *`,
        now,
        now,
        userId,
        room,
      );
    });
    // RETURNING's order is SQLite's to choose: back to the backlog's (arrival) order.
    return admitted
      .map((row) => ({ seq: (row as { seq: number }).seq, update: updateRow.parse(row) }))
      .sort((a, b) => a.update.createdAt.getTime() - b.update.createdAt.getTime() || a.seq - b.seq)
      .map((r) => r.update);
  }

  async deleteFinishedUpdatesBefore(before: Date): Promise<number> {
    const sql = `DELETE FROM updates WHERE ${statusIn(FINISHED)} AND updated_at < ?`;
    return this.#db.changes(sql, before.getTime());
  }

  async claimPlace(kind: string, userId: string, limit: number, ttlMs: number): Promise<string | null> {
    const now = Date.now();
    this.#db.run('DELETE FROM slots WHERE expires_at < ?', now);
    const id = newId();
    const taken = this.#db.changes(
      'INSERT INTO slots (id, kind, user_id, expires_at) SELECT ?, ?, ?, ? WHERE (SELECT count(*) FROM slots WHERE kind = ? AND user_id = ?) < ?',
      id,
      kind,
      userId,
      now + ttlMs,
      kind,
      userId,
      limit,
    );
    return taken === 1 ? id : null;
  }

  async releasePlace(id: string): Promise<void> {
    this.#db.run('DELETE FROM slots WHERE id = ?', id);
  }
}

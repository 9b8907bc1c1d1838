import { randomBytes } from 'node:crypto';
import type { SQLInputValue } from 'node:sqlite';
import { asRecord, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import {
  auditLogRecords,
  auditPageSize,
  type AuditEntryRecord,
  type AuditLogStore,
  type AuditPage,
  type NewAuditEntry,
} from './audit-log-store.ts';

// Append-only in the file too: a row once written is neither changed nor removed, whatever
// writes to the file (the store itself has no such method).
const TABLE = `
CREATE TABLE IF NOT EXISTS audit_log (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, at INTEGER NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
  target TEXT NOT NULL, details TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_log_by_org ON audit_log (org_id, at, id);
CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
  BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
  BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;`;

/** The `audit_log` table (issue 33). */
export const auditLogSchema: SqliteSchema = {
  tables: TABLE,
  steps: [
    {
      version: 11,
      adds: "each organisation's audit log (issue 33)",
      // The table is made at every open where it is missing; the step checks for itself.
      mends: true,
      up: (db) => db.exec(TABLE),
    },
  ],
};

const entryRow = asRecord(auditLogRecords(sqliteForms).entry);

let appended = 0;
/**
 * An id that sorts as the entries were appended (24 hex digits, like every id of the store):
 * entries of the same millisecond are listed by id, the last appended first. One process owns
 * the file, so a counter of its own orders them.
 */
const appendOrderId = (): string =>
  Date.now().toString(16).padStart(12, '0') +
  (appended++ % 0x1000000).toString(16).padStart(6, '0') +
  randomBytes(3).toString('hex');

/** The audit log in SQLite: the `audit_log` table, rows only ever inserted. */
export class SqliteAuditLog implements AuditLogStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async appendAuditEntry(entry: NewAuditEntry): Promise<AuditEntryRecord> {
    const record: AuditEntryRecord = { id: appendOrderId(), ...entry };
    this.#db.run(
      'INSERT INTO audit_log (id, org_id, at, actor, action, target, details) VALUES (?, ?, ?, ?, ?, ?, ?)',
      record.id,
      record.orgId,
      record.at.getTime(),
      JSON.stringify(record.actor),
      record.action,
      record.target,
      JSON.stringify(record.details),
    );
    return record;
  }

  async listAuditEntries(orgId: string, page: AuditPage): Promise<AuditEntryRecord[]> {
    const where = ['org_id = ?'];
    const params: SQLInputValue[] = [orgId];
    if (page.before) {
      where.push('(at < ? OR (at = ? AND id < ?))');
      params.push(page.before.at.getTime(), page.before.at.getTime(), page.before.id);
    }
    if (page.action) {
      where.push('action = ?');
      params.push(page.action);
    }
    const rows = this.#db.all(
      `SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY at DESC, id DESC LIMIT ?`,
      ...params,
      auditPageSize(page.limit),
    );
    return this.#db.unreadable.parseEach('audit entry', entryRow, rows);
  }
}

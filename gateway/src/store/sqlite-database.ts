import { randomBytes } from 'node:crypto';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { z } from 'zod';
import type { StoredForms } from './record-forms.ts';
import { DuplicateError, StoreFull } from './store.ts';
import type { UnreadableRecords } from './unreadable-records.ts';

/** Prepared statements kept per store: far more than the SQL texts it runs. */
const MAX_CACHED_STATEMENTS = 200;
/** SQLite's primary result code for a full database or disk (SQLITE_FULL). */
const SQLITE_FULL = 13;

// Rows read back are parsed like any other input: a file written by another version, or
// edited by hand, fails loudly here instead of deep inside a handler.
export const ms = z
  .number()
  .int()
  .transform((value) => new Date(value));
const json = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((text) => JSON.parse(text) as unknown)
    .pipe(schema);
/** SQLite's stored forms: text ids, milliseconds since the epoch (UTC), JSON text. */
export const sqliteForms: StoredForms = { id: z.string(), time: ms, structured: json };

const camelCase = (column: string) => column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
const snakeCase = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
/** A row read as its record: its snake_case columns are the record's camelCase fields. */
export const asRecord = <T extends z.ZodType>(schema: T) =>
  z.preprocess(
    (row) => Object.fromEntries(Object.entries(row as Record<string, unknown>).map(([k, v]) => [camelCase(k), v])),
    schema,
  );

/** A field's value as its column keeps it: a time as milliseconds, anything else as it is. */
export const asColumn = (value: unknown): SQLInputValue =>
  (value instanceof Date ? value.getTime() : value) as SQLInputValue;

/** Ids shaped like the MongoDB store's (24 hex digits), so both stores hand out the same kind. */
export const newId = () => randomBytes(12).toString('hex');

/** `?, ?, …` for `values`: one placeholder each. */
export const placeholders = (values: readonly unknown[]) => values.map(() => '?').join(', ');

/** A unique constraint's refusal as DuplicateError with `message`; any other error as it was. */
export function duplicateOr(error: unknown, message: string): unknown {
  const code = (error as { errcode?: number }).errcode;
  const unique = code === 2067 || code === 1555 || /UNIQUE constraint failed/.test((error as Error).message);
  return unique ? new DuplicateError(message) : error;
}

/** A failed write's error as the store's: a full disk is StoreFull; anything else is as it was. */
function storeError(error: unknown, path: string): unknown {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && (code & 0xff) === SQLITE_FULL ? new StoreFull(path, { cause: error }) : error;
}

/**
 * What each slice's SQLite file is built on: the store's one file (open between init and
 * close), its statements prepared once, its transactions, and where skipped records are counted.
 */
export class SqliteDatabase {
  readonly path: string;
  readonly unreadable: UnreadableRecords;
  #db: DatabaseSync | null = null;
  readonly #statements = new Map<string, StatementSync>();

  constructor(path: string, unreadable: UnreadableRecords) {
    this.path = path;
    this.unreadable = unreadable;
  }

  open(db: DatabaseSync): void {
    this.#db = db;
  }

  close(): void {
    this.#statements.clear();
    this.#db?.close();
    this.#db = null;
  }

  get conn(): DatabaseSync {
    if (!this.#db) throw new Error('the store is not open (init() first)');
    return this.#db;
  }

  /**
   * The statement for `sql`, prepared once: preparing parses the SQL, which cost more than many
   * of the reads and writes themselves. Only for statements run to their end at once; an
   * iterated one is prepared for its reader alone (running a statement again resets it).
   */
  prepared(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.conn.prepare(sql);
      // The SQL texts are the code's own (a list's placeholders vary only in number): few.
      if (this.#statements.size < MAX_CACHED_STATEMENTS) this.#statements.set(sql, statement);
    }
    return statement;
  }

  all(sql: string, ...params: SQLInputValue[]): unknown[] {
    return this.prepared(sql).all(...params);
  }

  get(sql: string, ...params: SQLInputValue[]): unknown {
    return this.prepared(sql).get(...params);
  }

  run(sql: string, ...params: SQLInputValue[]): { changes: number | bigint } {
    try {
      return this.prepared(sql).run(...params);
    } catch (error) {
      throw storeError(error, this.path);
    }
  }

  /** How many rows a write changed. */
  changes(sql: string, ...params: SQLInputValue[]): number {
    return Number(this.run(sql, ...params).changes);
  }

  transaction<T>(work: () => T): T {
    this.conn.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.conn.exec('COMMIT');
      return result;
    } catch (error) {
      // On a full disk (and other I/O errors) SQLite has already rolled the transaction back:
      // a ROLLBACK then throws "no transaction is active", which hid why the write failed.
      if (this.conn.isTransaction) this.conn.exec('ROLLBACK');
      throw storeError(error, this.path);
    }
  }

  /** The column a record's field is kept in: its name in snake_case. */
  column(field: string): string {
    return snakeCase(field);
  }

  /**
   * A record written as a row: its fields in their snake_case columns, its times as
   * milliseconds; `then` is the statement's conflict clause, if any.
   */
  insertRecord(table: string, record: object, then = ''): void {
    const entries = Object.entries(record);
    const columns = entries.map(([field]) => snakeCase(field));
    this.run(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${placeholders(columns)}) ${then}`.trimEnd(),
      ...entries.map(([, value]) => asColumn(value)),
    );
  }
}

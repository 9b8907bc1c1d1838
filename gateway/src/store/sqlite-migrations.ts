import type { DatabaseSync } from 'node:sqlite';

/** One step of a file's schema, from the version before it to its own. */
interface Migration {
  version: number;
  /** What the step adds, for whoever reads the list. */
  adds: string;
  up(db: DatabaseSync): void;
  /** Run at every open, whatever the file's version says: the step checks for what it adds itself. */
  mends?: true;
}

/**
 * A slice's part of the file, kept in the slice's SQLite file: its tables as a new file gets
 * them (with every column its steps add), its numbered steps for a file of an earlier version,
 * and indexes on columns a step adds (made once the steps have run). Dates are milliseconds
 * since the epoch (UTC); lists and structured fields are JSON text.
 */
export interface SqliteSchema {
  tables: string;
  steps?: readonly Migration[];
  indexes?: string;
}

const META = 'CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);';

/** Whether `table` has `column`. */
const hasColumn = (db: DatabaseSync, table: string, column: string): boolean =>
  db.prepare('SELECT 1 FROM pragma_table_info(?) WHERE name = ?').get(table, column) !== undefined;

/**
 * A step's work: `columns` added to `table` (`name TYPE …` each), each only where it is
 * missing. A table the file lacked was made at this open from the slice's tables, which have
 * every column already: its steps then add nothing.
 */
export const addColumns =
  (table: string, ...columns: string[]) =>
  (db: DatabaseSync): void => {
    for (const column of columns)
      if (!hasColumn(db, table, column.split(' ')[0]!)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column}`);
  };

/** The schema the slices make together: the highest of their steps' numbers (1 without any). */
const schemaVersion = (schemas: readonly SqliteSchema[]): number =>
  Math.max(1, ...schemas.flatMap((s) => s.steps ?? []).map((step) => step.version));

/**
 * Brings the file at `path` to the slices' schema version: their tables if new, then every
 * step numbered after the file's version, in number order (a step that mends at every open);
 * refuses a file written by a newer perfwatch.
 */
export function migrate(db: DatabaseSync, path: string, schemas: readonly SqliteSchema[]): void {
  const latest = schemaVersion(schemas);
  db.exec(META);
  for (const schema of schemas) db.exec(schema.tables);
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
  const version = row === undefined ? undefined : Number(row.value);
  if (version !== undefined && version > latest)
    throw new Error(`${path} was written by a newer perfwatch (schema ${row!.value}; this one knows ${latest})`);
  const steps = schemas.flatMap((s) => s.steps ?? []).sort((a, b) => a.version - b.version);
  for (const step of steps) if (step.mends || (version !== undefined && version < step.version)) step.up(db);
  for (const schema of schemas) if (schema.indexes) db.exec(schema.indexes);
  db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)").run(String(latest));
}

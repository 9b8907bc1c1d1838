import { z } from 'zod';

/** A stored record a list read could not parse: its kind, its id if it has one, why (never its values). */
export interface UnreadableRecord {
  kind: string;
  id: string | null;
  issue: string;
}

/**
 * What a store's list reads do with a record they cannot parse: skip it, count it, and tell
 * whoever listens. A list read serves many users at once (the scheduler's pass, retention,
 * the stuck-update sweep, `admin list`): one row written by another version or by hand must
 * not stop it for everyone. Reads of one record still fail loudly: their caller asked for
 * that record and nothing else.
 */
export class UnreadableRecords {
  readonly #counts = new Map<string, number>();
  readonly #listeners = new Set<(record: UnreadableRecord) => void>();

  /** Calls `listener` with every record skipped from now on (the gateway logs them); returns the unsubscribe. */
  onSkipped(listener: (record: UnreadableRecord) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Records skipped so far, by kind (a metric reads it). */
  counts(): ReadonlyMap<string, number> {
    return this.#counts;
  }

  /** Each row parsed with `schema`; those it refuses are left out, counted and reported. */
  parseEach<T>(kind: string, schema: z.ZodType<T>, rows: readonly unknown[]): T[] {
    const read: T[] = [];
    for (const row of rows) {
      const parsed = schema.safeParse(row);
      if (parsed.success) read.push(parsed.data);
      else this.skip(kind, row, parsed.error);
    }
    return read;
  }

  /** Counts and reports one record that could not be read. */
  skip(kind: string, row: unknown, error: unknown): void {
    this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + 1);
    const record: UnreadableRecord = { kind, id: idOf(row), issue: issueOf(error) };
    for (const listener of this.#listeners) listener(record);
  }
}

function idOf(row: unknown): string | null {
  if (typeof row !== 'object' || row === null) return null;
  const { _id, id } = row as { _id?: unknown; id?: unknown };
  const key = _id ?? id;
  return key === undefined || key === null ? null : String(key).slice(0, 100);
}

/** Where the record failed and the schema's message, not the values: a record may hold a user's data. */
function issueOf(error: unknown): string {
  if (error instanceof z.ZodError)
    return error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(record)'}: ${issue.message}`)
      .join('; ')
      .slice(0, 500);
  return error instanceof Error ? error.message.slice(0, 500) : 'unreadable';
}

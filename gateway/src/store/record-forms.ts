import type { z } from 'zod';

/**
 * How a backend keeps what is not a plain string or number: an id (an ObjectId in MongoDB,
 * text in SQLite), a time (a date, or milliseconds) and a structured field (a document's own
 * array or object, or JSON text in a column).
 *
 * Each slice writes the records it reads back once, from these forms (accounts-store.ts
 * `accountRecords`, …): each backend gives its forms and names its fields as the records do
 * (`_id` and snake_case columns renamed before parsing). What is read back is parsed like any
 * other input: a document or row written by another version, or by hand, fails loudly there
 * instead of deep inside a handler. Defaults stand for fields that records of earlier versions
 * lack, and for nulls a MongoDB-wire server may drop.
 */
export interface StoredForms {
  id: z.ZodType<string>;
  time: z.ZodType<Date>;
  structured: <T extends z.ZodType>(schema: T) => z.ZodType<z.output<T>>;
}

/** What every record with an id of its own has. */
export const ownId = ({ id, time }: StoredForms) => ({ id, createdAt: time });

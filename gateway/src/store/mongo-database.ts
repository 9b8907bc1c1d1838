import { MongoNetworkError, MongoServerError, MongoServerSelectionError, ObjectId, type Db } from 'mongodb';
import { z } from 'zod';
import type { StoredForms } from './record-forms.ts';
import { DuplicateError } from './store.ts';
import type { UnreadableRecords } from './unreadable-records.ts';

/** What each slice's MongoDB file is built on: the one database of the store, and where skipped records are counted. */
export interface MongoDatabase {
  readonly db: Db;
  readonly unreadable: UnreadableRecords;
}

const DUPLICATE_KEY = 11000;
/** MongoDB aborts one of two writes to the same document with this code; the write may simply be tried again. */
const WRITE_CONFLICT = 112;

export const objectId = z.instanceof(ObjectId).transform((id) => id.toHexString());

/** MongoDB's stored forms: ObjectIds, dates, and arrays and objects that are the document's own. */
export const mongoForms: StoredForms = {
  id: objectId,
  time: z.date(),
  structured: <T extends z.ZodType>(schema: T) => schema as z.ZodType<z.output<T>>,
};

/** A document read as its record: its `_id` is the record's id. */
export const asRecord = <T extends z.ZodType>(schema: T) =>
  z.preprocess((doc) => {
    const { _id, ...rest } = doc as Record<string, unknown>;
    return { ...rest, id: _id };
  }, schema);

export const isDuplicateKey = (error: unknown): boolean =>
  error instanceof MongoServerError && error.code === DUPLICATE_KEY;

/** A unique key's refusal as DuplicateError with `message`; any other error as it was. */
export const duplicateOr = (error: unknown, message: string): unknown =>
  isDuplicateKey(error) ? new DuplicateError(message) : error;

/**
 * A failure the same write may not meet again: the server could not be reached (refused,
 * reset, not selected in time), MongoDB says so itself (RetryableWriteError label, a write
 * conflict), or an SQLite-backed server (FerretDB) found its database locked by another writer.
 */
export function isTransientStoreError(error: unknown): boolean {
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true;
  if (!(error instanceof MongoServerError)) return false;
  return (
    error.hasErrorLabel('RetryableWriteError') ||
    error.code === WRITE_CONFLICT ||
    /SQLITE_BUSY|database is locked/.test(error.message)
  );
}

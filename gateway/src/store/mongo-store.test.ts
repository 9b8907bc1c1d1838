import { MongoNetworkError, MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { isTransientStoreError } from './mongo-database.ts';

describe('isTransientStoreError', () => {
  it('retries what may pass on its own, and nothing that would fail the same way again', () => {
    expect(isTransientStoreError(new MongoNetworkError('connect ECONNREFUSED 127.0.0.1:27017'))).toBe(true);
    // FerretDB on SQLite, under many concurrent writers (seen in the 1,000-update bench).
    expect(
      isTransientStoreError(
        new MongoServerError({
          message: '[collection.go:177 sqlite.(*collection).UpdateAll.func1] database is locked (5) (SQLITE_BUSY)',
          code: 1,
        }),
      ),
    ).toBe(true);
    expect(isTransientStoreError(new MongoServerError({ message: 'WriteConflict', code: 112 }))).toBe(true);
    expect(
      isTransientStoreError(
        new MongoServerError({ message: 'not primary', code: 10107, errorLabels: ['RetryableWriteError'] }),
      ),
    ).toBe(true);
    expect(isTransientStoreError(new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 }))).toBe(
      false,
    );
    expect(isTransientStoreError(new MongoServerError({ message: 'Document failed validation', code: 121 }))).toBe(
      false,
    );
    expect(isTransientStoreError(new Error('database is locked'))).toBe(false);
  });
});

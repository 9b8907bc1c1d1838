import { describe, expect, it } from 'vitest';
import { MongoStore } from './mongo-store.ts';
import { SqliteStore } from './sqlite-store.ts';
import { putMethods } from './store-slices.ts';

const methodsOf = (store: object) =>
  Object.keys(store)
    .filter((name) => typeof (store as Record<string, unknown>)[name] === 'function')
    .sort();

describe('the slices combined', () => {
  it('gives both stores the same methods, every slice bound to its own instance', () => {
    // Neither opens anything when built: the MongoDB client connects in init().
    const mongo = new MongoStore({ uri: 'mongodb://127.0.0.1:1', dbName: 'unopened' });
    const sqlite = new SqliteStore({ path: ':memory:' });
    expect(methodsOf(mongo)).toEqual(methodsOf(sqlite));
    expect(methodsOf(sqlite)).toEqual(
      expect.arrayContaining(['createUser', 'saveSnapshot', 'streamKpis', 'claimPlace']),
    );
  });

  it('refuses two slices that name the same method', () => {
    class One {
      ping(): string {
        return 'one';
      }
    }
    class Two {
      ping(): string {
        return 'two';
      }
    }
    expect(() => putMethods({}, [new One(), new Two()])).toThrow(/two slices of the store name ping/);
  });
});

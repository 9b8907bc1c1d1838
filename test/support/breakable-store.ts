import type { MongoStore } from '@perfwatch/gateway';

/** What a failing database says: words a 500 must never pass on to the caller. */
const DATABASE_FAILURE = 'connection reset by peer at /srv/db.ts:12';

/**
 * The test's store, its methods throwing a database's failure while `fails(method)` says so (a
 * database that breaks in the middle of a request), the real store's otherwise.
 */
export function breakableStore(store: MongoStore, fails: (method: string) => boolean): MongoStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        if (fails(String(property))) throw new Error(DATABASE_FAILURE);
        return bound(...args);
      };
    },
  });
}

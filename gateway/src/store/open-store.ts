import { join, resolve } from 'node:path';
import type { z } from 'zod';
import { storeSettings } from '../settings/store.ts';
import { MongoStore } from './mongo-store.ts';
import { SqliteStore } from './sqlite-store.ts';
import type { Store } from './store.ts';

/**
 * The environment of the programs that pick their store themselves (`perfwatch start` and
 * `perfwatch admin`), so both pick the same one: MongoDB when MONGODB_URI is set, otherwise the
 * embedded file PERFWATCH_DATA_DIR/perfwatch.sqlite.
 */
export const storeEnvFields = {
  MONGODB_URI: storeSettings.settings.MONGODB_URI,
  MONGODB_DB: storeSettings.settings.MONGODB_DB,
  PERFWATCH_DATA_DIR: storeSettings.settings.PERFWATCH_DATA_DIR.default('./data'),
};
type StoreEnv = z.output<z.ZodObject<typeof storeEnvFields>>;

/** The store that environment names (not opened yet), and where it is, for people to read. */
export function storeFromEnv(config: StoreEnv): { store: Store; where: string } {
  if (config.MONGODB_URI)
    return {
      store: new MongoStore({ uri: config.MONGODB_URI, dbName: config.MONGODB_DB }),
      where: `MongoDB database ${config.MONGODB_DB}`,
    };
  const path = join(resolve(config.PERFWATCH_DATA_DIR), 'perfwatch.sqlite');
  return { store: new SqliteStore({ path }), where: path };
}

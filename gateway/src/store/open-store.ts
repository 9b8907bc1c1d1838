import { join, resolve } from 'node:path';
import { z } from 'zod';
import { MongoStore } from './mongo-store.ts';
import { SqliteStore } from './sqlite-store.ts';
import type { Store } from './store.ts';

/**
 * The environment of the programs that pick their store themselves (`perfwatch start` and
 * `perfwatch admin`), so both pick the same one: MongoDB when MONGODB_URI is set, otherwise the
 * embedded file PERFWATCH_DATA_DIR/perfwatch.sqlite.
 */
export const storeEnvFields = {
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URI')
    .optional(),
  MONGODB_DB: z.string().min(1).default('perfwatch'),
  PERFWATCH_DATA_DIR: z.string().min(1).default('./data'),
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

import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

/** Where a gateway (and `perfwatch start`, `perfwatch admin`) keeps its records. */
export const storeSettings = settingGroup('Store', {
  /** No default here: the gateway has one, start and admin use MongoDB only when this is set. */
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// or mongodb+srv:// URI')
    .optional()
    .describe(
      'The MongoDB that holds the store. The gateway uses it unless PERFWATCH_DATA_DIR is set; ' +
        '`perfwatch start` and `perfwatch admin` only when it is set (else the embedded file).',
    ),
  MONGODB_DB: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,63}$/, 'must be a database name')
    .default('perfwatch')
    .describe("The MongoDB database's name."),
  /** No default here: on the gateway, setting it is what chooses the embedded store. */
  PERFWATCH_DATA_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Where the embedded store, perfwatch.sqlite, lives. On the gateway, set: the store is that file instead of ' +
        'MongoDB, for a fleet served by one gateway replica (the file belongs to one process).',
    ),
});

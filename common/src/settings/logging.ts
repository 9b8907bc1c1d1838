import { z } from 'zod';
import { settingGroup } from './setting-group.ts';

/** What a program logs, and how long it may take to stop. */
export const loggingSettings = settingGroup('Logging and shutdown', {
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe("The least severe log lines written (pino's levels)."),
  /**
   * No default here: each program has its own (what it must finish on a stop differs).
   */
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .optional()
    .describe('How long a stop may take (finishing the work in flight included) before the process exits anyway.'),
  LOG_FORMAT: z
    .enum(['auto', 'json', 'pretty'])
    .default('auto')
    .describe(
      '`auto`: readable lines when stderr is a terminal (someone watching `npm start`), JSON lines otherwise ' +
        '(a file, a pipe, a log collector); `json` or `pretty` to choose.',
    ),
});

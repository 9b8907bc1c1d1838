import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** How an agent runs Chrome and Lighthouse. */
export const chromeRunSettings = settingGroup('Chrome and Lighthouse runs', {
  CHROME_PATH: z.string().min(1).default('/usr/bin/chromium').describe('The Chrome or Chromium to run.'),
  CHROME_NO_SANDBOX: booleanFlag
    .optional()
    .describe(
      "Chrome's sandbox off (`true`) or on (`false`). Unset: off only when running as root, where it cannot start.",
    ),
  PERFWATCH_RUNS_PER_BROWSER: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(50)
    .describe('Runs one Chrome serves before a fresh one replaces it; 0 launches a Chrome per run.'),
  PERFWATCH_CAPACITY: z.coerce
    .number()
    .int()
    .min(1)
    .max(32)
    .default(1)
    .describe(
      "Runs at once, each with its own Chrome in its own thread. Concurrent runs share the machine's CPU and " +
        'skew each other’s timings: one per core at most, and 1 where measurements must compare over time.',
    ),
  PERFWATCH_CPU_MULTIPLIER: z
    .union([z.literal('auto'), z.coerce.number().positive().max(20)], {
      error: 'must be auto or a number from 0 to 20, e.g. 4',
    })
    .default('auto')
    .describe(
      "Mobile runs' CPU slowdown: `auto` (from the machine's benchmark index, by Lighthouse's calculator, so " +
        'agents on different hardware emulate the same phone) or a fixed multiplier.',
    ),
  PERFWATCH_CALIBRATE_EVERY_RUNS: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(50)
    .describe(
      "Runs between two measurements of the benchmark index; the first is made before the agent's first run, " +
        'and each only while the agent runs nothing.',
    ),
  PERFWATCH_KEEP_SCREENSHOTS: booleanFlag
    .default(false)
    .describe(
      '`true`: the final screenshot and the filmstrip are kept at full size; otherwise each is re-encoded as ' +
        'WebP within 30 kB (the final one 360 px wide, frames 120 px). The full-page screenshot is never kept.',
    ),
  PERFWATCH_KEEP_ARTIFACTS: booleanFlag
    .default(true)
    .describe(
      "`true`: each run's requests and trace are kept (gzipped, bounded, at most 32 runs, 256 MiB and 15 minutes) " +
        "for the gateway to pull its chosen run's (docs/artifacts.md); `false`: none kept, the snapshots' artifacts missing.",
    ),
});

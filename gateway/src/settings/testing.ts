import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

/** Settings that exist for the test suites only. */
export const testingSettings = settingGroup('Tests only', {
  PERFWATCH_TEST_KILL_AT: z
    .enum(['snapshot-saved', 'alerts-queued'])
    .optional()
    .describe(
      'The gateway SIGKILLs itself at this point of storing a snapshot with budget events (`snapshot-saved`: before ' +
        'its outbox write; `alerts-queued`: after it), to prove that a gateway dying there loses no alert.',
    ),
});

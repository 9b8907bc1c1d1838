import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

const ms = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** Reports of measured previews to forges (GitHub, GitLab, Gitea): how often, and how they are tried again. */
export const forgeSettings = settingGroup('Forge reports', {
  FORGE_REPORT_POLL_MS: ms(50, 600_000)
    .default(5_000)
    .describe('How often previews measured for a forge event are looked at, to report the ended ones.'),
  FORGE_REPORT_RETRY_FIRST_MS: ms(100, 3_600_000)
    .default(60_000)
    .describe(
      'A report a forge rate-limited or did not answer is tried again at its Retry-After, else after this long, doubling up to FORGE_REPORT_RETRY_MAX_MS.',
    ),
  FORGE_REPORT_RETRY_MAX_MS: ms(100, 86_400_000).default(1_800_000).describe('The longest wait between two tries.'),
  FORGE_REPORT_GIVE_UP_AFTER_MS: ms(1_000, 7 * 86_400_000)
    .default(86_400_000)
    .describe('How long after its event a report is given up (its error kept on the event).'),
});

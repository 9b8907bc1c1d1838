import { z } from 'zod';
import { parseLocationList, settingGroup, type Location } from '@perfwatch/common';

/** The keys that seal projects' login credentials and webhook secrets, and where credentials may go. */
export const credentialSettings = settingGroup('Secrets and credentials', {
  PERFWATCH_SECRETS_KEY: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The key (32 random bytes, base64) that seals projects' credentials for pages behind a login and webhook " +
        'signing secrets. Unset: no project can have credentials.',
    ),
  PERFWATCH_SECRETS_KEY_PREVIOUS: z
    .string()
    .min(1)
    .optional()
    .describe('During a rotation (`perfwatch admin rotate-secrets-key`), the key being replaced.'),
  PERFWATCH_TRUSTED_LOCATIONS: z
    .string()
    .default('')
    .transform((text, ctx): Location[] => {
      // Unset or blank: no location is trusted.
      if (text.replaceAll(',', '').trim() === '') return [];
      try {
        return [...new Set(parseLocationList(text))];
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return [];
      }
    })
    .describe(
      "Locations whose agents may be sent a project's credentials, comma-separated (`london,frankfurt`): a job " +
        "carries them opened to whoever runs the location's agents. The agents `perfwatch start` runs in its own " +
        'process are trusted always.',
    ),
});

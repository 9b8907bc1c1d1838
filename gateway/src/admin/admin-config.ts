import { z } from 'zod';
import { programSettings, targetSettings } from '@perfwatch/common';
import { credentialSettings } from '../settings/credentials.ts';
import { webhookSettings } from '../settings/webhooks.ts';
import { storeEnvFields } from '../store/open-store.ts';

/** What `perfwatch admin` reads: the store perfwatch start uses, and the gateway's rules for what it adds. */
export const adminSettings = programSettings({
  program: 'perfwatch admin',
  schema: z.object({
    ...storeEnvFields,
    PERFWATCH_ALLOW_TARGETS: targetSettings.settings.PERFWATCH_ALLOW_TARGETS.default(''),
    PERFWATCH_SECRETS_KEY: credentialSettings.settings.PERFWATCH_SECRETS_KEY,
    PERFWATCH_SECRETS_KEY_PREVIOUS: credentialSettings.settings.PERFWATCH_SECRETS_KEY_PREVIOUS,
    WEBHOOK_MAX_PER_USER: webhookSettings.settings.WEBHOOK_MAX_PER_USER,
  }),
});

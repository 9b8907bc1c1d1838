import { z } from 'zod';
import {
  listeningSettings,
  loggingSettings,
  natsEnvSchema,
  parseEnv,
  programSettings,
  targetSettings,
} from '@perfwatch/common';
import { credentialSettings } from './settings/credentials.ts';
import { cruxSettings } from './settings/crux.ts';
import { httpSettings } from './settings/http.ts';
import { limitSettings } from './settings/limits.ts';
import { schedulingSettings } from './settings/scheduling.ts';
import { storeSettings } from './settings/store.ts';
import { testingSettings } from './settings/testing.ts';
import { updateSettings } from './settings/updates.ts';
import { webhookSettings } from './settings/webhooks.ts';

const { MONGODB_URI, MONGODB_DB, PERFWATCH_DATA_DIR } = storeSettings.settings;

/** What `perfwatch gateway` reads: every gateway group, and the shared ones it needs. */
export const gatewaySettings = programSettings({
  program: 'perfwatch gateway',
  schema: z.object({
    ...natsEnvSchema.shape,
    ...listeningSettings.settings,
    MONGODB_URI: MONGODB_URI.default('mongodb://127.0.0.1:27017/'),
    MONGODB_DB,
    PERFWATCH_DATA_DIR,
    LOG_LEVEL: loggingSettings.settings.LOG_LEVEL,
    SHUTDOWN_TIMEOUT_MS: loggingSettings.settings.SHUTDOWN_TIMEOUT_MS.default(30_000),
    ...httpSettings.settings,
    ...limitSettings.settings,
    ...updateSettings.settings,
    ...schedulingSettings.settings,
    ...webhookSettings.settings,
    ...cruxSettings.settings,
    ...credentialSettings.settings,
    PERFWATCH_ALLOW_TARGETS: targetSettings.settings.PERFWATCH_ALLOW_TARGETS.default(''),
    ...testingSettings.settings,
  }),
});

export const gatewayEnvSchema = gatewaySettings.schema;

export type GatewayConfig = z.infer<typeof gatewayEnvSchema>;

/**
 * A complete configuration from the schema's defaults and a few settings, for programs that
 * run a gateway without reading its environment (`perfwatch start`, tests, benchmarks).
 */
export function gatewayConfigWith(settings: Partial<GatewayConfig>): GatewayConfig {
  return { ...gatewayEnvSchema.parse({}), ...settings };
}

export function loadGatewayConfig(env: Readonly<Record<string, string | undefined>>): GatewayConfig {
  return parseEnv(gatewayEnvSchema, env);
}

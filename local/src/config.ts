import { z } from 'zod';
import {
  listeningSettings,
  loggingSettings,
  natsSettings,
  parseEnv,
  programSettings,
  settingGroup,
  targetSettings,
} from '@perfwatch/common';
import { chromeRunSettings } from '@perfwatch/agent';
import { gatewaySettings, storeEnvFields } from '@perfwatch/gateway';

/** What only `perfwatch start` reads. */
export const startOnlySettings = settingGroup('perfwatch start', {
  PERFWATCH_DEMO_PORT: z.coerce.number().int().min(0).max(65535).default(8081).describe('The demo site’s port.'),
  PERFWATCH_AGENT_NATS_CREDS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "With NATS_URL: the creds file `perfwatch start`'s agent connects with, as a user of its own (the shipped hub " +
        'gives gateways and agents different users); unset, it connects as the gateway does.',
    ),
  PERFWATCH_AGENT_NATS_NKEY_SEED_FILE: z
    .string()
    .min(1)
    .optional()
    .describe("With NATS_URL: the nkey seed file `perfwatch start`'s agent connects with (as above)."),
});

/** Alone, start measures its own demo site on loopback; on a shared NATS, its agent is any agent. */
const LOOPBACK = '127.0.0.0/8,::1/128';

const { CHROME_PATH, PERFWATCH_RUNS_PER_BROWSER } = chromeRunSettings.settings;

/**
 * What `perfwatch start` reads. NATS_URL set: gateway and agent talk over that NATS (JetStream)
 * with the gateway's credentials and TLS settings, instead of the in-process bus.
 */
export const startSettings = programSettings({
  program: 'perfwatch start',
  schema: z.object({
    PORT: listeningSettings.settings.PORT,
    HOST: listeningSettings.settings.HOST.default('127.0.0.1'),
    ...startOnlySettings.settings,
    ...natsSettings.settings,
    ...storeEnvFields,
    CHROME_PATH,
    PERFWATCH_RUNS_PER_BROWSER,
    PERFWATCH_ALLOW_TARGETS: targetSettings.settings.PERFWATCH_ALLOW_TARGETS,
    CRUX_API_KEY: gatewaySettings.schema.shape.CRUX_API_KEY,
    LOG_LEVEL: loggingSettings.settings.LOG_LEVEL,
    LOG_FORMAT: loggingSettings.settings.LOG_FORMAT,
    SHUTDOWN_TIMEOUT_MS: loggingSettings.settings.SHUTDOWN_TIMEOUT_MS.default(60_000),
  }),
  notes: { PERFWATCH_ALLOW_TARGETS: `\`${LOOPBACK}\` (empty with NATS_URL)` },
});

export type StartConfig = z.infer<typeof startSettings.schema> & { PERFWATCH_ALLOW_TARGETS: string };

export function loadStartConfig(env: Readonly<Record<string, string | undefined>>): StartConfig {
  const parsed = parseEnv(startSettings.schema, env);
  return {
    ...parsed,
    PERFWATCH_ALLOW_TARGETS: parsed.PERFWATCH_ALLOW_TARGETS ?? (parsed.NATS_URL ? '' : LOOPBACK),
  };
}

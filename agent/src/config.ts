import { hostname } from 'node:os';
import { z } from 'zod';
import {
  listeningSettings,
  loggingSettings,
  natsEnvSchema,
  OPS_ALIASES,
  parseEnv,
  programSettings,
  targetSettings,
  withAliases,
} from '@perfwatch/common';
import { agentIdentitySettings } from './settings/agent-identity.ts';
import { chromeRunSettings } from './settings/chrome-runs.ts';

/** What `perfwatch agent` reads. */
export const agentSettings = programSettings({
  program: 'perfwatch agent',
  schema: z.object({
    ...natsEnvSchema.shape,
    ...agentIdentitySettings.settings,
    ...chromeRunSettings.settings,
    PERFWATCH_ALLOW_TARGETS: targetSettings.settings.PERFWATCH_ALLOW_TARGETS.default(''),
    OPS_PORT: listeningSettings.settings.OPS_PORT.default(9464),
    OPS_HOST: listeningSettings.settings.OPS_HOST,
    LOG_LEVEL: loggingSettings.settings.LOG_LEVEL,
    // Long enough for the runs in flight to end (RUN_TIMEOUT_MS is 120 s on gateways).
    SHUTDOWN_TIMEOUT_MS: loggingSettings.settings.SHUTDOWN_TIMEOUT_MS.default(150_000),
  }),
  aliases: OPS_ALIASES,
});

const agentEnvSchema = agentSettings.schema;

/** What an agent built without reading an environment runs with (perfwatch start, tests): the schema's defaults. */
export const agentDefaults = agentEnvSchema.omit({ PERFWATCH_LOCATION: true }).parse({});

export type AgentConfig = z.infer<typeof agentEnvSchema> & { agentId: string; noSandbox: boolean };

export function loadAgentConfig(env: Readonly<Record<string, string | undefined>>, isRoot: boolean): AgentConfig {
  const parsed = parseEnv(agentEnvSchema, withAliases(env, agentSettings.aliases));
  return {
    ...parsed,
    agentId: parsed.PERFWATCH_AGENT_ID ?? `${hostname()}-${process.pid}`,
    noSandbox: parsed.CHROME_NO_SANDBOX ?? isRoot,
  };
}

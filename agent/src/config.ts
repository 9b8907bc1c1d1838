import { hostname } from 'node:os';
import { z } from 'zod';
import { agentIdSchema, LOCATIONS, logLevelSchema, natsEnvSchema, parseEnv } from '@perfwatch/common';
import { parseAllowList } from '@perfwatch/common';

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** Runs one Chrome serves before a fresh one replaces it; 0 launches a Chrome per run. */
export const runsPerBrowserSchema = z.coerce.number().int().min(0).max(10_000).default(50);

export const agentEnvSchema = natsEnvSchema.extend({
  PERFWATCH_LOCATION: z.enum(LOCATIONS, { error: `must be one of ${LOCATIONS.join(', ')}` }),
  PERFWATCH_AGENT_ID: agentIdSchema.optional(),
  CHROME_PATH: z.string().min(1).default('/usr/bin/chromium'),
  /** Chrome's sandbox cannot start as root; defaults to on only when not root. */
  CHROME_NO_SANDBOX: booleanFlag.optional(),
  PERFWATCH_RUNS_PER_BROWSER: runsPerBrowserSchema,
  /**
   * Addresses the agent may reach although they are not public (CIDRs or addresses, comma
   * separated), e.g. `10.20.0.0/16` for an intranet the agent is meant to audit.
   */
  PERFWATCH_ALLOW_TARGETS: z
    .string()
    .default('')
    .refine((text) => {
      try {
        parseAllowList(text);
        return true;
      } catch {
        return false;
      }
    }, 'must be comma-separated CIDRs or IP addresses, e.g. 10.0.0.0/8,192.168.1.20'),
  PERFWATCH_KEEP_SCREENSHOTS: booleanFlag.default(false),
  /**
   * Mobile runs' CPU slowdown: `auto` (from the machine's benchmark index, by Lighthouse's
   * calculator, so agents on different hardware emulate the same phone) or a fixed multiplier.
   */
  PERFWATCH_CPU_MULTIPLIER: z
    .union([z.literal('auto'), z.coerce.number().positive().max(20)], {
      error: 'must be auto or a number from 0 to 20, e.g. 4',
    })
    .default('auto'),
  /** Runs between two measurements of the benchmark index (one is also made when a Chrome starts its first run). */
  PERFWATCH_CALIBRATE_EVERY_RUNS: z.coerce.number().int().min(1).max(10_000).default(50),
  /**
   * Runs at once, each with its own Chrome in its own thread. Concurrent runs share the
   * machine's CPU and skew each other's timings: one per core at most, and 1 (the default)
   * where measurements must compare over time.
   */
  PERFWATCH_CAPACITY: z.coerce.number().int().min(1).max(32).default(1),
  /** How often the agent announces itself to gateways; three missed ones and it counts as gone. */
  PERFWATCH_ANNOUNCE_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** The agent's operator port: /metrics, /healthz, /readyz. */
  PERFWATCH_OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  PERFWATCH_OPS_HOST: z.string().min(1).default('0.0.0.0'),
  LOG_LEVEL: logLevelSchema,
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(150_000),
});

export type AgentConfig = z.infer<typeof agentEnvSchema> & { agentId: string; noSandbox: boolean };

export function loadAgentConfig(env: Readonly<Record<string, string | undefined>>, isRoot: boolean): AgentConfig {
  const parsed = parseEnv(agentEnvSchema, env);
  return {
    ...parsed,
    agentId: parsed.PERFWATCH_AGENT_ID ?? `${hostname()}-${process.pid}`,
    noSandbox: parsed.CHROME_NO_SANDBOX ?? isRoot,
  };
}

import { z } from 'zod';
import {
  listeningSettings,
  loggingSettings,
  natsEnvSchema,
  parseEnv,
  programSettings,
  targetSettings,
  withAliases,
} from '@perfwatch/common';
import { artifactSettings } from './settings/artifacts.ts';
import { credentialSettings } from './settings/credentials.ts';
import { cruxSettings } from './settings/crux.ts';
import { forgeSettings } from './settings/forge.ts';
import { httpSettings } from './settings/http.ts';
import { limitSettings } from './settings/limits.ts';
import { pageMetricsSettings } from './settings/page-metrics.ts';
import { pageMetricsOptionsOf } from './page-metrics/page-metrics-route.ts';
import { schedulingSettings } from './settings/scheduling.ts';
import { ssoSettings } from './settings/sso.ts';
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
    ...forgeSettings.settings,
    ...cruxSettings.settings,
    ...credentialSettings.settings,
    ...ssoSettings.settings,
    ...artifactSettings.settings,
    ...pageMetricsSettings.settings,
    PERFWATCH_ALLOW_TARGETS: targetSettings.settings.PERFWATCH_ALLOW_TARGETS.default(''),
    ...testingSettings.settings,
  }),
  // The setting covered /v1/overview alone before /v1/audit and /v1/update took it up.
  aliases: { OVERVIEW_STALL_MS: 'ANSWER_STALL_MS' },
});

export const gatewayEnvSchema = gatewaySettings.schema;

export type GatewayConfig = z.infer<typeof gatewayEnvSchema>;

/**
 * A complete configuration from the schema's defaults and a few settings, for programs that
 * run a gateway without reading its environment (`perfwatch start`, tests, benchmarks).
 */
export function gatewayConfigWith(settings: Partial<GatewayConfig>): GatewayConfig {
  return { ...gatewayDefaults, ...settings };
}

/** The schema's defaults: what a part built without a configuration (tests, perfwatch start) falls back on. */
export const gatewayDefaults: GatewayConfig = gatewayEnvSchema.parse({});

export function loadGatewayConfig(env: Readonly<Record<string, string | undefined>>): GatewayConfig {
  return parseEnv(gatewayEnvSchema, withAliases(env, gatewaySettings.aliases));
}

/** The HTTP app's and server's settings from a configuration (runtime.ts; tests of the HTTP layer). */
export function httpOptionsOf(config: GatewayConfig) {
  return {
    bodyLimit: config.BODY_LIMIT,
    rateLimits: { updates: config.RATE_LIMIT_UPDATES_PER_MINUTE, reads: config.RATE_LIMIT_READS_PER_MINUTE },
    stallMs: config.ANSWER_STALL_MS,
    maxHeavyReads: config.MAX_HEAVY_READS,
    authFailuresPerMinute: config.AUTH_FAILURES_PER_MINUTE,
    maxWebhooksPerUser: config.WEBHOOK_MAX_PER_USER,
    maxSitesPerOrg: config.MAX_SITES_PER_ORG,
    ...pageMetricsOptionsOf(config),
    ...(config.TRUST_PROXY !== undefined ? { trustProxy: config.TRUST_PROXY } : {}),
    timeouts: {
      headersMs: Math.min(config.HEADERS_TIMEOUT_MS, config.REQUEST_TIMEOUT_MS),
      requestMs: config.REQUEST_TIMEOUT_MS,
    },
  };
}

/** The scheduler's timings and retention from a configuration (runtime.ts). */
export function schedulerOptionsOf(config: GatewayConfig) {
  return {
    intervalMs: config.SCHEDULER_INTERVAL_MS,
    leaseTtlMs: config.SCHEDULER_LEASE_TTL_MS,
    retentionDays: config.RETENTION_DAYS,
    retentionEveryMs: config.RETENTION_EVERY_MS,
    stuckUpdates: {
      everyMs: config.UPDATE_SWEEP_EVERY_MS,
      graceMs: config.UPDATE_STUCK_AFTER_MS,
      deadlineMs: config.UPDATE_DEADLINE_MS,
    },
  };
}

/** The webhook sender's settings from a configuration (runtime.ts; its tests). */
export function webhookSenderOptionsOf(config: GatewayConfig) {
  return {
    pollMs: config.WEBHOOK_POLL_MS,
    deadlineMs: config.WEBHOOK_DEADLINE_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    perUser: config.WEBHOOK_IN_FLIGHT_PER_USER,
    retentionMs: config.WEBHOOK_DELIVERY_RETENTION_DAYS * 86_400_000,
    pruneEveryMs: config.RETENTION_EVERY_MS,
    retry: {
      firstMs: config.WEBHOOK_RETRY_FIRST_MS,
      maxMs: config.WEBHOOK_RETRY_MAX_MS,
      giveUpAfterMs: config.WEBHOOK_GIVE_UP_AFTER_MS,
    },
  };
}

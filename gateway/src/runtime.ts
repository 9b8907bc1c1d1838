import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { startOpsServer, type InProcessAgent, type OpsServer, type Readiness } from '@perfwatch/common';
import type { AgentRegistry } from './dispatch/agent-registry.ts';
import { createCruxClient } from './snapshots/crux/crux-client.ts';
import { createCruxHistoryClient } from './snapshots/crux/crux-history.ts';
import { startFieldHistory } from './snapshots/field-history.ts';
import { createGatewayMetrics, type GatewayMetrics } from './http/metrics.ts';
import type { Dispatcher } from './dispatch/run-outcome.ts';
import { createServer, type GatewayServer } from './http/server.ts';
import type { Store } from './store/store.ts';
import { createUpdateService, type UpdateService } from './updates/update-service.ts';
import type { UpdateQueue } from './updates/update-queue.ts';
import { createUpdateAdmission, type UpdateAdmission } from './updates/update-admission.ts';
import { startScheduler } from './scheduling/scheduler.ts';
import { countAnnouncements, createWebhookOutbox, type WebhookOutbox } from './alerts/webhook-outbox.ts';
import { credentialTrust, type CredentialTrust } from './projects/credential-trust.ts';
import { createSecretBox, type SecretBox } from './accounts/secret-box.ts';
import { startWebhookSender } from './alerts/webhook-sender.ts';
import { forgeFetch } from './forge/forge-fetch.ts';
import { startForgeReporter } from './forge/forge-reporter.ts';
import { heavyReadLimit } from './snapshots/heavy-reads.ts';
import { createWebhookTargets, type WebhookTargets } from './alerts/webhook-targets.ts';
import { createAsyncUpdates } from './updates/async-updates.ts';
import { httpOptionsOf, schedulerOptionsOf, webhookSenderOptionsOf, type GatewayConfig } from './config.ts';
import { createLocalTransport } from './dispatch/local/local-transport.ts';
import { createNatsTransport } from './dispatch/nats/nats-transport.ts';
import type { Transport } from './dispatch/transport.ts';
import { ssoAppOf } from './sso/sso-app.ts';
import { siteWork, type SiteDiscoveries } from './sites/site-schedule.ts';
import { siteBudgetsResolver } from './sites/site-budgets.ts';
import type { SsoDeps } from './sso/sso-routes.ts';
import type { ArtifactStore } from './artifacts/store/artifact-store.ts';
import { artifactStoreFromSettings } from './artifacts/store/artifact-store-from-settings.ts';
import type { ArtifactReceiver } from './artifacts/artifact-receiver.ts';
import { limitedReceiver } from './artifacts/limited-receiver.ts';
import { artifactReadsOf } from './artifacts/artifacts-route.ts';
import { testKillAt } from './test-kill-at.ts';

export interface GatewayRuntime {
  http: GatewayServer;
  /** The ops port's server, with OPS_PORT set. */
  ops?: OpsServer;
  agents: AgentRegistry;
  metrics: GatewayMetrics;
  /** Ordered: stop accepting HTTP and finish open requests, then release NATS and the store. */
  stop(): Promise<void>;
}

/**
 * How the gateway reaches agents: NATS (agents anywhere, JetStream for the update queue), or
 * agents in this very process (`perfwatch start` without NATS_URL: the queue lives in the
 * process and the store makes it durable).
 */
export type GatewayTransport =
  { nc: NatsConnection; localAgents?: undefined } | { nc?: undefined; localAgents: readonly InProcessAgent[] };

/** Wires a gateway from connected parts; shared by `perfwatch gateway`, `perfwatch start` and the tests. */
export async function startGateway({
  store,
  logger,
  config,
  artifacts = artifactStoreFromSettings(config).store,
  now = () => new Date(),
  ...given
}: GatewayTransport & Wiring & { artifacts?: ArtifactStore; now?: () => Date }): Promise<GatewayRuntime> {
  // `now`: what the scheduler's passes and artifact expiry read; tests set it days ahead.
  const wiring = { store, logger, config, artifacts, now };
  // First: a half-configured single sign-on stops the gateway before anything runs.
  const sso = ssoAppOf(wiring);
  const transport = await chooseTransport(given, logger, config);
  const { metrics, unsubscribe } = watch(wiring, transport);
  const trust = credentialTrust(config.PERFWATCH_TRUSTED_LOCATIONS, transport.trustedLocations);
  const receiver = limitedReceiver(transport.artifactReceiver(artifacts), config.ARTIFACT_TRANSFERS_AT_ONCE);
  const parts = updateParts({ ...wiring, dispatcher: transport.dispatcher, receiver, metrics, credentialTrust: trust });
  const { outbox, targetGuard, secrets, updates } = parts;
  const { queue, admission } = await startQueue({ ...wiring, transport, updates, outbox });
  const background = startBackgroundWork({ ...wiring, queue, admission, outbox, targetGuard, secrets, metrics });
  let stopping = false;
  const readiness = readinessCheck(transport, store, () => stopping);
  const shared = { ...background.sites, targetGuard, secrets, credentialTrust: trust, updates, admission, ...sso };
  const { http, ops } = await serve({ ...wiring, metrics, readiness, ...shared });
  return {
    http,
    ...(ops ? { ops } : {}),
    agents: transport.registry,
    metrics,
    async stop() {
      // Not ready first: traffic moves to other replicas while this one still serves.
      stopping = true;
      if (config.SHUTDOWN_READINESS_DELAY_MS > 0) await sleep(config.SHUTDOWN_READINESS_DELAY_MS);
      await http.close();
      await background.sites.siteDiscoveries.stop();
      await background.scheduler.stop();
      // Queued updates this gateway took are finished and acknowledged, not dropped.
      await queue.stop();
      await background.webhooks.stop();
      await background.forgeReports.stop();
      await background.fieldHistory?.stop();
      await transport.close();
      unsubscribe();
      // Last: /metrics and /readyz answer (not ready) while the rest stops.
      await ops?.close();
    },
  };
}

/** The one place a transport is chosen: NATS when given a connection, else the agents handed in. */
function chooseTransport(given: GatewayTransport, logger: Logger, config: GatewayConfig): Promise<Transport> {
  if (!given.nc) return Promise.resolve(createLocalTransport({ agents: given.localAgents, logger }));
  const { MAX_RUNS_IN_FLIGHT: maxInFlight, UPDATE_ACK_WAIT_MS: ackWaitMs } = config;
  return createNatsTransport({ nc: given.nc, logger, maxInFlight, ackWaitMs });
}

/** The gateway's metrics, watching the transport, the store's pending updates and its unreadable records. */
function watch({ store, logger }: Wiring, transport: Transport) {
  const metrics = createGatewayMetrics({
    nc: transport.nc,
    agents: transport.registry,
    queueDepth: (location) => transport.dispatcher.waiting?.(location) ?? 0,
    pendingUpdates: (location) => store.countPendingUpdates(location),
  });
  const unsubscribe = store.unreadable.onSkipped((record) => {
    logger.warn({ record }, 'skipped a stored record that cannot be read');
    metrics.recordSkipped(record.kind);
  });
  return { metrics, unsubscribe };
}

interface Wiring {
  store: Store;
  logger: Logger;
  config: GatewayConfig;
}

/** The update service and what it and the API share: webhook outbox, address rules, secrets. */
function updateParts({
  store,
  logger,
  config,
  dispatcher,
  receiver,
  metrics,
  credentialTrust,
}: Wiring & {
  dispatcher: Dispatcher;
  receiver: ArtifactReceiver;
  metrics: GatewayMetrics;
  credentialTrust: CredentialTrust;
}) {
  const crux = config.CRUX_API_KEY
    ? createCruxClient({ endpoint: config.CRUX_API_ENDPOINT, apiKey: config.CRUX_API_KEY, logger })
    : undefined;
  const testKill = testKillAt(config, logger);
  const outbox = createWebhookOutbox({
    store,
    logger,
    publicUrl: config.PUBLIC_URL ?? `http://localhost:${config.PORT}`,
    onAnnouncement: countAnnouncements(metrics.registry),
    ...(testKill ? { testKill } : {}),
  });
  const targetGuard = createWebhookTargets(config.PERFWATCH_ALLOW_TARGETS);
  const { PERFWATCH_SECRETS_KEY: key, PERFWATCH_SECRETS_KEY_PREVIOUS: previous } = config;
  const secrets = createSecretBox({ key, previous });
  const updates = createUpdateService({
    secrets,
    credentialTrust,
    dispatcher,
    store,
    logger,
    runTimeoutMs: config.RUN_TIMEOUT_MS,
    replyTimeoutMs: config.SYNC_UPDATE_TIMEOUT_MS,
    maxRetests: config.MAX_RETESTS,
    crux,
    observer: metrics,
    onSnapshot: (snapshot) => outbox.snapshotStored(snapshot).then(() => undefined),
    budgetsFor: siteBudgetsResolver(store),
    artifacts: receiver,
    ...(testKill ? { testKill } : {}),
  });
  return { outbox, targetGuard, secrets, updates };
}

/** The transport's update queue and the admission of each user's next update into it. */
async function startQueue({
  store,
  logger,
  config,
  transport,
  updates,
  outbox,
}: Wiring & {
  transport: Transport;
  updates: UpdateService;
  outbox: WebhookOutbox;
}): Promise<{ queue: UpdateQueue; admission: UpdateAdmission }> {
  // The queue admits a user's next update as one ends; admission queues it: each needs the other.
  const started: { queue?: UpdateQueue } = {};
  const admission = createUpdateAdmission({
    store,
    queue: () => started.queue!,
    logger,
    perUser: config.MAX_ACTIVE_UPDATES_PER_USER,
  });
  const queueOptions = {
    store,
    updates,
    logger,
    admission,
    outbox,
    deadlineMs: config.UPDATE_DEADLINE_MS,
    workers: config.UPDATE_WORKERS,
    maxDeliver: config.UPDATE_MAX_DELIVER,
    retryDelayMs: config.UPDATE_RETRY_DELAY_MS,
  };
  const queue = (started.queue = await transport.startQueue(queueOptions));
  return { queue, admission };
}

/** What runs on its own: the scheduler (and its sweeps), webhook deliveries, forge reports, field history. */
function startBackgroundWork({
  store,
  logger,
  config,
  queue,
  admission,
  outbox,
  targetGuard,
  secrets,
  metrics,
  artifacts,
  now,
}: Wiring & {
  artifacts: ArtifactStore;
  now: () => Date;
  queue: UpdateQueue;
  admission: UpdateAdmission;
  outbox: WebhookOutbox;
  targetGuard: WebhookTargets;
  secrets: SecretBox;
  metrics: GatewayMetrics;
}) {
  const sites = siteWork({ store, guard: targetGuard, logger, admission, config });
  const scheduler = startScheduler({
    store,
    queue,
    admission,
    logger,
    holder: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    ...schedulerOptionsOf(config),
    artifacts: { store: artifacts, days: config.ARTIFACT_RETENTION_DAYS },
    now,
    outbox,
    sites: sites.tick,
  });
  const webhooks = startWebhookSender({
    store,
    logger,
    targets: targetGuard,
    secrets,
    ...webhookSenderOptionsOf(config),
    onAttempt: (outcome) => metrics.webhookAttempt(outcome),
  });
  const forgeReports = startForgeReports({ store, logger, config, targetGuard, secrets });
  const fieldHistory = startFieldHistoryIfKeyed({ store, logger, config });
  return { scheduler, webhooks, forgeReports, fieldHistory, sites: { siteDiscoveries: sites.discoveries } };
}

/** Reports of previews measured for forge events, to their forges (forge-reporter.ts). */
function startForgeReports({
  store,
  logger,
  config,
  targetGuard,
  secrets,
}: Wiring & { targetGuard: WebhookTargets; secrets: SecretBox }) {
  return startForgeReporter(
    {
      store,
      secrets,
      // One stored result read at a time for reports, beside the API's own places.
      reads: heavyReadLimit({ atOnce: 1 }),
      publicUrl: config.PUBLIC_URL ?? `http://localhost:${config.PORT}`,
      fetch: forgeFetch(targetGuard),
      // A preview being measured is looked at every few polls, not every one.
      waitingMs: config.FORGE_REPORT_POLL_MS * 4,
      logger,
      retry: {
        firstMs: config.FORGE_REPORT_RETRY_FIRST_MS,
        maxMs: config.FORGE_REPORT_RETRY_MAX_MS,
        giveUpAfterMs: config.FORGE_REPORT_GIVE_UP_AFTER_MS,
      },
    },
    config.FORGE_REPORT_POLL_MS,
  );
}

/** With a CrUX key, projects get their field data of the weeks before they were added. */
function startFieldHistoryIfKeyed({ store, logger, config }: Wiring) {
  if (!config.CRUX_API_KEY) return undefined;
  return startFieldHistory({
    store,
    logger,
    holder: `${hostname()}-${process.pid}-history`,
    everyMs: config.FIELD_HISTORY_EVERY_MS,
    history: createCruxHistoryClient({ endpoint: config.CRUX_API_ENDPOINT, apiKey: config.CRUX_API_KEY }),
  });
}

/** Ready while not stopping and both the transport and the database answer a round trip, each within 2 s. */
function readinessCheck(transport: Transport, store: Store, stopping: () => boolean) {
  return async (): Promise<Readiness> => {
    if (stopping()) return { ok: false, reason: 'shutting down' };
    if (!transport.open()) return { ok: false, reason: `${transport.name} connection closed` };
    // The reason names the part, never a driver's message: /readyz may be on the public port.
    try {
      await withTimeout(transport.ping(), 2_000, `${transport.name} did not answer`);
    } catch {
      return { ok: false, reason: `${transport.name} did not answer` };
    }
    try {
      await withTimeout(store.ping(), 2_000, 'the database did not answer');
    } catch {
      return { ok: false, reason: 'the database did not answer' };
    }
    return { ok: true };
  };
}

/** The ops port (with OPS_PORT set) and the API's HTTP server, listening. */
async function serve({
  store,
  logger,
  config,
  metrics,
  readiness,
  admission,
  artifacts,
  now,
  ...shared
}: Wiring & {
  artifacts: ArtifactStore;
  now: () => Date;
  metrics: GatewayMetrics;
  readiness: ReturnType<typeof readinessCheck>;
  targetGuard: WebhookTargets;
  secrets: SecretBox;
  credentialTrust: CredentialTrust;
  updates: UpdateService;
  admission: UpdateAdmission;
  sso?: SsoDeps;
  siteDiscoveries: SiteDiscoveries;
}): Promise<{ http: GatewayServer; ops: OpsServer | undefined }> {
  const ops =
    config.OPS_PORT === undefined
      ? undefined
      : await startOpsServer({
          port: config.OPS_PORT,
          host: config.OPS_HOST,
          registry: metrics.registry,
          ready: readiness,
        });
  if (ops) logger.info({ url: ops.url }, 'ops port listening (/metrics, /readyz, /healthz)');
  const http = await createServer({
    ...shared,
    startAsync: createAsyncUpdates({
      store,
      admission,
      limits: {
        queuedRunsPerUser: config.MAX_QUEUED_RUNS_PER_USER,
        pendingPerLocation: config.MAX_PENDING_UPDATES_PER_LOCATION,
      },
    }),
    queuedRunsPerUser: config.MAX_QUEUED_RUNS_PER_USER,
    opsElsewhere: ops !== undefined,
    store,
    logger,
    metrics,
    readiness,
    ...httpOptionsOf(config),
    syncUpdates: { perUser: config.MAX_SYNC_UPDATES_PER_USER, ttlMs: 2 * config.SYNC_UPDATE_TIMEOUT_MS + 60_000 },
    port: config.PORT,
    host: config.HOST,
    artifactReads: artifactReadsOf(artifacts, config.ARTIFACT_RETENTION_DAYS, now),
  });
  logger.info({ url: http.url }, 'gateway listening');
  return { http, ops };
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms))),
  ]).finally(() => clearTimeout(timer));
}

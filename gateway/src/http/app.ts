import { randomUUID } from 'node:crypto';
import express, { type Express, type RequestHandler, type Router } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { readinessAnswer, type Readiness } from '@perfwatch/common';
import { apiDocsRouter } from './api-docs.ts';
import { authenticate } from './auth.ts';
import { authorize } from './authorize.ts';
import { dashboardRouter } from '../dashboard/dashboard-router.ts';
import { heavyReadLimit } from '../snapshots/heavy-reads.ts';
import { errorHandler, notFoundRoute, onlyMethods } from './http-errors.ts';
import { GATEWAY_ENDPOINTS, type RouteDeps } from './endpoints.ts';
import { createOpenApiDocument } from './openapi.ts';
import { acceptsJson, failedAuthGuard, jsonBodyOnly, perUserLimit } from './request-guards.ts';
import { createSecretBox, type SecretBox } from '../accounts/secret-box.ts';
import { createAuditLog } from '../audit-log/audit-log.ts';
import type { SyncUpdateLimit } from '../updates/update-route.ts';
import type { AccountsStore } from '../accounts/store/accounts-store.ts';
import type { TeamsStore } from '../teams/store/teams-store.ts';
import type { UpdateService } from '../updates/update-service.ts';
import type { StartAsync } from '../updates/async-updates.ts';
import { createWebhookTargets, type WebhookTargets } from '../alerts/webhook-targets.ts';
import { NO_TRUST, type CredentialTrust } from '../projects/credential-trust.ts';
import { forgeReceiver, type ForgeReceiverDeps } from '../forge/forge-receiver.ts';
import { loggedUrl } from './logged-url.ts';
import { authRouter, type SsoDeps } from '../sso/sso-routes.ts';
import { sessionAuthenticator } from '../sso/session-auth.ts';
import { ROUTE_BASE, type GatewayMetrics } from './metrics.ts';
import { pageMetricsRoute, type PageMetricsSettings } from '../page-metrics/page-metrics-route.ts';
import { createSiteDiscoveries, type SiteDiscoveries } from '../sites/site-discoveries.ts';
import type { ArtifactReads } from '../artifacts/artifacts-route.ts';

export interface AppDeps {
  /** What the routes use, and the tokens requests are authenticated by. */
  store: RouteDeps['store'] &
    Pick<AccountsStore, 'findToken'> &
    Pick<TeamsStore, 'findMembership'> &
    ForgeReceiverDeps['store'];
  updates: UpdateService;
  logger: Logger;
  /** Prometheus metrics; absent: no /metrics. */
  metrics?: GatewayMetrics;
  /** `/metrics` and `/readyz` are served on the ops port instead (OPS_PORT): not on this app. */
  opsElsewhere?: boolean;
  /** mode=async: the update enters its user's backlog and the durable queue (async-updates.ts). */
  startAsync: StartAsync;
  /** Whether this gateway should get traffic; absent: ready whenever it answers. */
  readiness?: () => Promise<Readiness>;
  /** The largest JSON body (BODY_LIMIT). */
  bodyLimit: string;
  /** Per user (all of its tokens) and minute. */
  rateLimits: { updates: number; reads: number };
  /** Sync updates in flight per user; absent: unlimited (tests of the HTTP layer). */
  syncUpdates?: SyncUpdateLimit;
  /** A client that reads nothing of a long answer for this long is cut off (ANSWER_STALL_MS). */
  stallMs: number;
  /** Reads of stored results (/v1/audit, /v1/compare) at once (MAX_HEAVY_READS). */
  maxHeavyReads: number;
  /** Failed authentications per client address and minute before 429 (AUTH_FAILURES_PER_MINUTE). */
  authFailuresPerMinute: number;
  /** Express's `trust proxy`: how X-Forwarded-For names the client (TRUST_PROXY); absent: the socket's address. */
  trustProxy?: boolean | number | string;
  /** The address rules webhook targets pass (PERFWATCH_ALLOW_TARGETS); absent: public https only. */
  targetGuard?: WebhookTargets;
  /** Webhooks one user may have (WEBHOOK_MAX_PER_USER). */
  maxWebhooksPerUser: number;
  /** Seals projects' login credentials (PERFWATCH_SECRETS_KEY); absent: none can be set. */
  secrets?: SecretBox;
  /** The locations credentials may go to (PERFWATCH_TRUSTED_LOCATIONS); absent: none. */
  credentialTrust?: CredentialTrust;
  /** The dashboard's single sign-on (SSO_ISSUER_URL): its routes under /auth, and sessions on /v1; absent: none. */
  sso?: SsoDeps;
  /** Sites' discoveries (issue 34); absent: made here from the target guard, never stopped (tests of the HTTP layer). */
  siteDiscoveries?: SiteDiscoveries;
  /** Runs one user may have waiting (MAX_QUEUED_RUNS_PER_USER); absent: its default, 5000. */
  queuedRunsPerUser?: number;
  /** Sites one organisation may have (MAX_SITES_PER_ORG); absent: its default, 20. */
  maxSitesPerOrg?: number;
  /** `GET /metrics/pages` (PAGE_METRICS=on, page-metrics/); absent: none. */
  pageMetrics?: PageMetricsSettings;
  /** Where /v1/artifacts reads, and the retention cells' artifacts are reported by (issue 35); absent: none. */
  artifactReads?: ArtifactReads;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;
const OPS_PATHS = new Set(['/healthz', '/readyz', '/metrics', '/metrics/pages']);

/** Builds the gateway's HTTP app from its dependencies. Never listens: see createServer. */
export function createApp(deps: AppDeps): Express {
  const { logger, metrics, opsElsewhere = false, readiness = async () => ({ ok: true }) } = deps;
  const app = express();
  app.disable('x-powered-by');
  if (deps.trustProxy !== undefined) app.set('trust proxy', deps.trustProxy);
  app.set('query parser', 'simple');
  app.use(requestIds);
  app.use(requestLog(logger));
  if (metrics) app.use(metrics.httpMiddleware);

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  if (!opsElsewhere) {
    app.get('/readyz', async (_req, res) => {
      const answer = readinessAnswer(await readiness());
      res.status(answer.status).json(answer.body);
    });
  }
  if (metrics && !opsElsewhere) {
    app.get('/metrics', async (_req, res) => {
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });
  }
  // On this port whatever OPS_PORT says: its token guards it, and the ops port has no auth.
  if (deps.pageMetrics) app.get('/metrics/pages', pageMetricsRoute({ store: deps.store, ...deps.pageMetrics }));
  const openapi = createOpenApiDocument();
  app.get('/v1/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  app.use('/v1/docs', apiDocsRouter());
  app.use('/v1', apiRouter(deps));
  app.use(authRouter(deps.sso));
  app.use(dashboardRouter());
  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}

/** Every request's id: the caller's X-Request-Id when it is one, a new one otherwise; echoed. */
const requestIds: RequestHandler = (req, res, next) => {
  const given = req.get('x-request-id');
  req.requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
  res.set('X-Request-Id', req.requestId);
  next();
};

/** One log line per request, with its id, method, URL and status; never its headers. */
function requestLog(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (req) => (req as express.Request).requestId,
    // Probes and scrapes every few seconds would drown the log.
    autoLogging: { ignore: (req) => OPS_PATHS.has(req.url?.split('?')[0] ?? '') },
    customLogLevel: (_req, res, error) =>
      error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
    // The URL is the caller's input: kept under its own key, secret-shaped values dropped; headers are left out
    // (the logger's redaction covers Authorization should a serializer add them back).
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({
        id: req.id,
        method: req.method,
        url: loggedUrl(req.url),
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  });
}

/** The API under /v1: every route behind the method, content and token checks, then its user's rate limit. */
function apiRouter(deps: AppDeps): Router {
  const { store, logger, metrics, startAsync, bodyLimit, rateLimits, maxHeavyReads, authFailuresPerMinute, sso } = deps;
  const targetGuard = deps.targetGuard ?? createWebhookTargets();
  const v1 = express.Router();
  v1.use((req, res, next) => {
    res.locals[ROUTE_BASE] = req.baseUrl;
    next();
  });
  const json = express.json({ limit: bodyLimit, strict: false });
  const failedAuth = failedAuthGuard(authFailuresPerMinute);
  const auth = authenticate(store, failedAuth.failed, sso ? sessionAuthenticator(sso.store) : undefined);
  const checks = [acceptsJson, jsonBodyOnly, json, failedAuth.check, auth];
  const limits = perUserLimits(rateLimits);
  // One set of places for both: together they are what holds stored results in memory.
  const reads = heavyReadLimit({
    atOnce: maxHeavyReads,
    ...(metrics ? { onRefused: () => metrics.heavyReadRefused() } : {}),
  });
  metrics?.watchHeavyReads(reads);
  const routeDeps = routeDepsOf(deps, reads, targetGuard);
  mountForgeEvents(v1, {
    store,
    secrets: routeDeps.secrets,
    logger,
    targetGuard,
    startAsync,
    authFailuresPerMinute,
  });
  for (const { contract, limit, route, access } of Object.values(GATEWAY_ENDPOINTS))
    v1.all(
      expressPath(contract.path),
      onlyMethods(contract.methods),
      ...checks,
      authorize(contract, access),
      limits[limit],
      route(routeDeps),
    );
  return v1;
}

/** What every route is given: the app's dependencies, with defaults for those a test may leave out. */
function routeDepsOf(deps: AppDeps, reads: RouteDeps['reads'], targetGuard: WebhookTargets): RouteDeps {
  const { store, updates, logger, startAsync, syncUpdates, stallMs, maxWebhooksPerUser } = deps;
  const secrets = deps.secrets ?? createSecretBox({});
  return {
    store,
    updates,
    logger,
    startAsync,
    syncUpdates,
    stallMs,
    reads,
    webhookRules: { targets: targetGuard, secrets, maxPerUser: maxWebhooksPerUser },
    secrets,
    credentialTrust: deps.credentialTrust ?? NO_TRUST,
    auditLog: createAuditLog({ store }),
    siteDiscoveries: deps.siteDiscoveries ?? createSiteDiscoveries({ store, guard: targetGuard, logger }),
    queuedRunsPerUser: deps.queuedRunsPerUser ?? 5_000,
    maxSitesPerOrg: deps.maxSitesPerOrg ?? 20,
    artifacts: deps.artifactReads,
  };
}

/** Each kind of endpoint's per-user (organisation), per-minute limit. */
const perUserLimits = (rateLimits: AppDeps['rateLimits']) => ({
  updates: perUserLimit(rateLimits.updates, 'updates'),
  reads: perUserLimit(rateLimits.reads, 'reads'),
});

/**
 * `/v1/forge-events/{forge}`. Forges send no API token: their signature admits an event. One
 * that does not verify for a repository linked here counts against its address, in a count of
 * its own: a forge delivers every tenant's events from the same few addresses, which must not
 * share the API's count.
 */
function mountForgeEvents(
  v1: Router,
  {
    store,
    secrets,
    logger,
    targetGuard,
    startAsync,
    authFailuresPerMinute,
  }: Pick<AppDeps, 'store' | 'logger' | 'startAsync' | 'authFailuresPerMinute'> & {
    secrets: NonNullable<AppDeps['secrets']>;
    targetGuard: NonNullable<AppDeps['targetGuard']>;
  },
): void {
  const failedAuth = failedAuthGuard(authFailuresPerMinute);
  const forgeEvents = forgeReceiver({
    store,
    secrets,
    logger,
    targets: targetGuard,
    startAsync,
    failed: failedAuth.failed,
  });
  v1.all('/forge-events/:forge', onlyMethods(['POST']), acceptsJson, failedAuth.check, ...forgeEvents);
}

/** `/v1/updates/{id}` as the /v1 router matches it: `/updates/:id`. */
function expressPath(path: string): string {
  return path.replace(/^\/v1/, '').replace(/\{(\w+)\}/g, ':$1');
}

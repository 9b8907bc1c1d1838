import type { NatsConnection } from '@nats-io/nats-core';
import type { RequestHandler } from 'express';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import {
  createMetricsRegistry,
  LOCATIONS,
  registerNatsConnected,
  type ArtifactKind,
  type ArtifactState,
  type Device,
  type Location,
  type RunVerdict,
  type UpdateType,
} from '@perfwatch/common';
import type { AgentRegistry } from '../dispatch/agent-registry.ts';

/** res.locals key where a mounted router records its mount path for the route label. */
export const ROUTE_BASE = 'perfwatchRouteBase';

export type UpdateMode = 'sync' | 'async';
/** complete: every (device, location) measured; partial: some; failed: none. */
type UpdateOutcomeLabel = 'complete' | 'partial' | 'failed';

/** What the update service reports as it works; metrics are one listener. */
export interface UpdateObserver {
  updateDone(mode: UpdateMode, updateType: UpdateType, outcome: UpdateOutcomeLabel): void;
  /** One dispatch (one run, or its retry) and how it ended: `ok` or the failure code. */
  runDispatched(location: Location, device: Device, outcome: string, seconds: number): void;
  /** One successful run kept in a snapshot, with the gateway's verdict on it. */
  runJudged(location: Location, device: Device, verdict: RunVerdict): void;
  /** One artifact of a cell's representative run, kept (with its bytes) or missing. */
  artifactReceived?(kind: ArtifactKind, state: ArtifactState['state'], bytes: number): void;
}

export interface GatewayMetrics extends UpdateObserver {
  registry: Registry;
  /** Times every HTTP request by route template (never the URL: it carries user input). */
  httpMiddleware: RequestHandler;
  webhookAttempt(outcome: 'delivered' | 'retry' | 'failed'): void;
  /** A stored record a list read skipped because it could not be parsed, by its kind. */
  recordSkipped(kind: string): void;
  /** A read of stored results (/v1/audit, /v1/compare) refused with 503: no place came in time. */
  heavyReadRefused(): void;
  /** Reports the reads of stored results running and waiting, as scraped. */
  watchHeavyReads(reads: { readonly active: number; readonly waiting: number }): void;
}

/** A gauge read when scraped: `collect` sets its values. */
type GaugeOf = <L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  collect: (set: (labels: Record<L, string>, value: number) => void) => void | Promise<void>,
) => Gauge<L>;

/** Counters, histograms and scraped gauges registered in `registry`. */
function metricsIn(registry: Registry) {
  const counter = <L extends string>(name: keyof typeof HELP, labelNames: readonly L[]) =>
    new Counter({ name, help: HELP[name], labelNames, registers: [registry] });
  const histogram = <L extends string>(name: keyof typeof HELP, labelNames: readonly L[], buckets: number[]) =>
    new Histogram({ name, help: HELP[name], labelNames, buckets, registers: [registry] });
  const gauge: GaugeOf = (name, help, labelNames, collect) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        return collect((labels, value) => this.set(labels, value));
      },
    });
  return { counter, histogram, gauge };
}

/**
 * The gateway's Prometheus metrics, in a registry of this gateway's own (two gateways in one
 * process, as in tests, do not share counters). Labels are bounded sets: route templates,
 * methods, status codes, locations, devices, update types, outcome codes; never a URL, a
 * token or a project.
 */
export function createGatewayMetrics({
  nc,
  agents,
  queueDepth,
  pendingUpdates,
}: {
  nc?: NatsConnection;
  agents: AgentRegistry;
  queueDepth: (location: Location) => number;
  pendingUpdates: (location: Location) => Promise<number>;
}): GatewayMetrics {
  const registry = createMetricsRegistry();
  const { counter, histogram, gauge } = metricsIn(registry);
  const events = eventMetrics(counter, histogram);
  const { httpDuration, updates, dispatch, runs, webhookAttempts, skippedRecords, heavyReadsRefused } = events;
  agentGauges(gauge, agents);
  queueGauges(gauge, queueDepth, pendingUpdates);
  // Without NATS (perfwatch start's in-process bus) there is no connection to report.
  if (nc) registerNatsConnected(registry, nc);

  return {
    registry,
    httpMiddleware: httpTiming(httpDuration),
    updateDone(mode, updateType, outcome) {
      updates.inc({ mode, update_type: updateType, outcome });
    },
    runDispatched(location, device, outcome, seconds) {
      dispatch.observe({ location, device, outcome: outcome.toLowerCase() }, seconds);
    },
    runJudged(location, device, verdict) {
      runs.inc({ location, device, verdict });
    },
    artifactReceived(kind, state, bytes) {
      events.artifacts.inc({ kind, state });
      if (state === 'stored') events.artifactBytes.inc({ kind }, bytes);
    },
    webhookAttempt(outcome) {
      webhookAttempts.inc({ outcome });
    },
    recordSkipped(kind) {
      skippedRecords.inc({ kind });
    },
    heavyReadRefused() {
      heavyReadsRefused.inc();
    },
    watchHeavyReads(reads) {
      gauge(
        'perfwatch_heavy_reads',
        'Reads of stored results (/v1/audit, /v1/compare) holding one of the MAX_HEAVY_READS places, and waiting for one.',
        ['state'],
        (set) => {
          set({ state: 'active' }, reads.active);
          set({ state: 'waiting' }, reads.waiting);
        },
      );
    },
  };
}

/** What /metrics says of each metric the gateway counts or times. */
const HELP = {
  perfwatch_http_request_duration_seconds: 'HTTP requests by route template, method and status.',
  perfwatch_updates_total: 'Updates by mode, update type and outcome (complete, partial, failed).',
  perfwatch_dispatch_duration_seconds:
    'From sending a run to an agent until its reply (or failure), by location, device and outcome.',
  perfwatch_artifacts_total:
    "Artifacts of cells' representative runs by kind and state: stored, or missing (the agent had none, the transfer failed, the artifact store was down).",
  perfwatch_artifact_bytes_total: 'Gzip bytes of the artifacts stored, by kind.',
  perfwatch_runs_total:
    'Successful runs kept in snapshots by location, device and verdict (reliable, suspect); suspect runs are measured again, and a rising share of them says an agent is overloaded or its host busy.',
  perfwatch_webhook_attempts_total:
    'Webhook delivery attempts by outcome: delivered, retry (the receiver failed; tried again later), failed (given up after WEBHOOK_GIVE_UP_AFTER_MS).',
  perfwatch_heavy_reads_refused_total:
    'Reads of stored results (/v1/audit, /v1/compare) refused with 503 because no place came free within 5 s: MAX_HEAVY_READS is too small for the traffic, or some reads are slow (large results, slow clients).',
  perfwatch_store_records_skipped_total:
    "Stored records a list read skipped because they could not be parsed (written by another version or by hand), by kind; each is logged with its id. Any rise wants a look: the record's owner misses it.",
} as const;
/** Reads take milliseconds; a sync update takes tens of seconds to minutes. */
const HTTP_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** A run takes from about a second (a small page on a warm Chrome) to the run timeout. */
const RUN_SECONDS = [0.5, 1, 2.5, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600];

/** What the gateway counts and times as it works: requests, updates, runs and webhook deliveries. */
function eventMetrics(
  counter: ReturnType<typeof metricsIn>['counter'],
  histogram: ReturnType<typeof metricsIn>['histogram'],
) {
  const httpDuration = histogram(
    'perfwatch_http_request_duration_seconds',
    ['route', 'method', 'status'],
    HTTP_SECONDS,
  );
  const updates = counter('perfwatch_updates_total', ['mode', 'update_type', 'outcome']);
  const dispatch = histogram('perfwatch_dispatch_duration_seconds', ['location', 'device', 'outcome'], RUN_SECONDS);
  const runs = counter('perfwatch_runs_total', ['location', 'device', 'verdict']);
  const webhookAttempts = counter('perfwatch_webhook_attempts_total', ['outcome']);
  const skippedRecords = counter('perfwatch_store_records_skipped_total', ['kind']);
  const heavyReadsRefused = counter('perfwatch_heavy_reads_refused_total', []);
  const artifacts = counter('perfwatch_artifacts_total', ['kind', 'state']);
  const artifactBytes = counter('perfwatch_artifact_bytes_total', ['kind']);
  return {
    httpDuration,
    updates,
    dispatch,
    runs,
    webhookAttempts,
    skippedRecords,
    heavyReadsRefused,
    artifacts,
    artifactBytes,
  };
}

/**
 * Live agents and their runners per location, from their announcements. The runners' gauge keeps
 * its name, perfwatch_agent_slots: dashboards and alert rules use it.
 */
function agentGauges(gauge: GaugeOf, agents: AgentRegistry): void {
  gauge('perfwatch_agents', 'Live agents per location, from their announcements.', ['location'], (set) => {
    const live = agents.all();
    for (const location of LOCATIONS) set({ location }, live.filter((a) => a.location === location).length);
  });
  gauge(
    'perfwatch_agent_slots',
    'Runners of the live agents per location: capacity, and how many are busy.',
    ['location', 'state'],
    (set) => {
      const live = agents.all();
      for (const location of LOCATIONS) {
        const here = live.filter((a) => a.location === location);
        set(
          { location, state: 'capacity' },
          here.reduce((n, a) => n + a.capacity, 0),
        );
        set(
          { location, state: 'busy' },
          here.reduce((n, a) => n + a.busy, 0),
        );
      }
    },
  );
}

/** Runs waiting in this gateway, and updates pending in the database, per location. */
function queueGauges(
  gauge: GaugeOf,
  queueDepth: (location: Location) => number,
  pendingUpdates: (location: Location) => Promise<number>,
): void {
  gauge(
    'perfwatch_queue_depth',
    'Runs waiting for an agent of the location with room, in this gateway.',
    ['location'],
    (set) => {
      for (const location of LOCATIONS) set({ location }, queueDepth(location));
    },
  );
  gauge(
    'perfwatch_updates_pending',
    "Async and scheduled updates in the queue or running that include the location (all gateways; from the database; not those waiting in their users' backlogs). Past MAX_PENDING_UPDATES_PER_LOCATION new async updates get 429.",
    ['location'],
    async (set) => {
      const counts = await Promise.all(
        LOCATIONS.map(async (location) => [location, await pendingUpdates(location).catch(() => Number.NaN)] as const),
      );
      for (const [location, count] of counts) set({ location }, count);
    },
  );
}

/** Times every HTTP request by its route template (never the URL: it carries user input). */
function httpTiming(httpDuration: Histogram<'route' | 'method' | 'status'>): RequestHandler {
  return (req, res, next) => {
    const end = httpDuration.startTimer();
    res.once('finish', () => {
      // The matched route's template; requests no route matched share one label value. A
      // router's mount path is gone from req.baseUrl once an error left it: see ROUTE_BASE.
      const base = typeof res.locals[ROUTE_BASE] === 'string' ? res.locals[ROUTE_BASE] : req.baseUrl;
      const route = req.route ? `${base}${String(req.route.path)}` : 'unmatched';
      end({ route, method: req.method, status: String(res.statusCode) });
    });
    next();
  };
}

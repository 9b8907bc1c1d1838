import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { formatApiDateTime, type CellCheck, type WebhookEvent, type WebhookPayload } from '@perfwatch/common';
import type {
  LocationSnapshot,
  NewDelivery,
  ProjectRecord,
  SnapshotsStore,
  WebhookRecord,
  WebhooksStore,
} from '../store/store.ts';

/**
 * How a stored snapshot's budget events reached the outbox: `queued` right after the save,
 * `deferred` when that write failed (the snapshot stays marked for the sweep), `swept` by the
 * sweep for a snapshot whose writer died or failed before its outbox write.
 */
export type AlertAnnouncement = 'queued' | 'deferred' | 'swept';

/** Counts announcements in `registry` as `perfwatch_alert_announcements_total{outcome}`. */
export function countAnnouncements(registry: Registry): (outcome: AlertAnnouncement) => void {
  const counter = new Counter({
    name: 'perfwatch_alert_announcements_total',
    help: "Stored snapshots' budget events put in the webhook outbox, by outcome: queued (right after the save), deferred (that write failed; the snapshot stays marked for the sweep), swept (put there by the sweep after a gateway died or failed before its outbox write).",
    labelNames: ['outcome'],
    registers: [registry],
  });
  return (outcome) => counter.inc({ outcome });
}

/** Test-only points where a gateway may be made to die (PERFWATCH_TEST_KILL_AT). */
export type TestKillPoint = 'snapshot-saved' | 'alerts-queued';

interface OutboxDeps {
  store: Pick<WebhooksStore, 'listWebhooks' | 'enqueueDeliveries'> & Pick<SnapshotsStore, 'markSnapshotAnnounced'>;
  /** Where users reach the dashboard: the links in each event. */
  publicUrl: string;
  logger: Logger;
  now: () => Date;
  /** Told of each stored snapshot's announcement (a metric). */
  onAnnouncement?: (outcome: AlertAnnouncement) => void;
  /** Tests only: called at points where a gateway's death must lose nothing. */
  testKill?: (point: TestKillPoint) => void;
}

/** A stored snapshot, as its budget events need it. */
interface StoredSnapshot {
  project: ProjectRecord;
  updateId: string;
  date: Date;
  results: readonly Pick<LocationSnapshot, 'device' | 'location' | 'checks'>[];
}

/** Announcing a snapshot again, by the sweep: only webhooks that existed when it was stored are sent its events. */
interface LateAnnouncement {
  storedAt: Date;
}

/** An update that ended without a snapshot. */
interface FailedUpdate {
  userId: string;
  url: string;
  updateId: string;
  reason: string;
}

/** An event and where it came from (update, cell, event): what its delivery ids are made of. */
type OutboxEvent = { origin: string; payload: WebhookPayload };

/**
 * Puts a project's events in the outbox, one delivery per webhook that wants them. A delivery's
 * id comes from the webhook and where the event came from (update, cell, event), so announcing
 * the same event again (a redelivered update that finds its snapshot stored, the sweep after a
 * writer that died between its outbox write and recording it) stores nothing new.
 */
export function createWebhookOutbox({
  now = () => new Date(),
  ...given
}: Omit<OutboxDeps, 'now'> & { now?: () => Date }) {
  const deps: OutboxDeps = { ...given, now };
  return {
    /**
     * The budget events of a stored snapshot: one per cell and event, with the checks that
     * changed. Once they are in the outbox the snapshot is recorded announced; until then its
     * save's mark keeps it in the sweep's sight, so a failure here loses nothing.
     */
    snapshotStored: (snapshot: StoredSnapshot, late?: LateAnnouncement): Promise<number> =>
      announceSnapshot(deps, snapshot, late),
    /** An update that ended without a snapshot. */
    updateFailed: (update: FailedUpdate): Promise<number> =>
      enqueue(deps, update.userId, update.url, [failureEvent(deps.publicUrl, update)]),
  };
}

async function announceSnapshot(deps: OutboxDeps, snapshot: StoredSnapshot, late?: LateAnnouncement) {
  const events = budgetEvents(deps.publicUrl, snapshot);
  if (events.length === 0) return 0;
  try {
    const queued = await enqueue(deps, snapshot.project.userId, snapshot.project.url, events, late?.storedAt);
    deps.testKill?.('alerts-queued');
    await deps.store.markSnapshotAnnounced(snapshot.updateId);
    deps.onAnnouncement?.(late ? 'swept' : 'queued');
    return queued;
  } catch (error) {
    deps.onAnnouncement?.('deferred');
    throw error;
  }
}

function dashboardLink(publicUrl: string, route: string, params: Record<string, string>): string {
  return `${publicUrl.replace(/\/+$/, '')}/#/${route}?${new URLSearchParams(params)}`;
}

function budgetEvents(publicUrl: string, { project, updateId, date, results }: StoredSnapshot): OutboxEvent[] {
  const snapshotDate = formatApiDateTime(date);
  return results.flatMap(({ device, location, checks = [] }) =>
    (['budget.failed', 'budget.recovered'] as const).flatMap((event) => {
      const changed = checks.filter((c: CellCheck) => c.event === event);
      if (changed.length === 0) return [];
      const payload: WebhookPayload = {
        event,
        project: project.url,
        device,
        location,
        snapshotDate,
        checks: changed,
        dashboardUrl: dashboardLink(publicUrl, 'snapshot', { url: project.url, date: snapshotDate }),
      };
      return [{ origin: `${updateId}|${device}|${location}|${event}`, payload }];
    }),
  );
}

function failureEvent(publicUrl: string, { url, updateId, reason }: FailedUpdate): OutboxEvent {
  const payload: WebhookPayload = {
    event: 'update.failed',
    project: url,
    device: null,
    location: null,
    snapshotDate: null,
    checks: [],
    dashboardUrl: dashboardLink(publicUrl, 'project', { url }),
    reason,
    updateId,
  };
  return { origin: `${updateId}|update.failed`, payload };
}

async function enqueue(
  { store, logger, now }: OutboxDeps,
  userId: string,
  projectUrl: string,
  events: readonly OutboxEvent[],
  storedAt?: Date,
): Promise<number> {
  if (events.length === 0) return 0;
  const hooks = (await store.listWebhooks(userId)).filter(
    (hook) => (hook.projectUrl === null || hook.projectUrl === projectUrl) && (!storedAt || hook.createdAt <= storedAt),
  );
  const createdAt = now();
  const deliveries: NewDelivery[] = hooks.flatMap((hook) =>
    events.map(({ origin, payload }) => ({
      id: deliveryId(hook, origin),
      webhookId: hook.id,
      userId,
      event: payload.event,
      body: bodyFor(hook, payload),
      createdAt,
    })),
  );
  await store.enqueueDeliveries(deliveries);
  if (deliveries.length > 0)
    logger.info(
      { project: projectUrl, deliveries: deliveries.length, events: events.map((e) => e.payload.event) },
      'webhook deliveries queued',
    );
  return deliveries.length;
}

export type WebhookOutbox = ReturnType<typeof createWebhookOutbox>;

function deliveryId(hook: WebhookRecord, origin: string): string {
  return createHash('sha256').update(`${hook.id}|${origin}`).digest('hex').slice(0, 32);
}

const TITLES: Record<WebhookEvent, string> = {
  'budget.failed': ':red_circle: Budget failed',
  'budget.recovered': ':large_green_circle: Budget recovered',
  'update.failed': ':warning: Update failed',
};

/** The body as posted: the payload itself, or Slack's incoming-webhook message for `slack`. */
function bodyFor(hook: WebhookRecord, payload: WebhookPayload): string {
  if (hook.format === 'json') return JSON.stringify(payload);
  const where = payload.device ? ` on ${payload.device} from ${payload.location} at ${payload.snapshotDate} UTC` : '';
  const lines = [
    `*${TITLES[payload.event]}*: ${payload.project}${where}`,
    ...payload.checks.map((c) => `• ${c.message}`),
    ...(payload.reason ? [payload.reason] : []),
    `<${payload.dashboardUrl}|Open in perfwatch>`,
  ];
  return JSON.stringify({ text: lines.join('\n') });
}

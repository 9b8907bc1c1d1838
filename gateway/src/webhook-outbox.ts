import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { formatApiDateTime, type CellCheck, type WebhookEvent, type WebhookPayload } from '@perfwatch/common';
import type { LocationSnapshot, NewDelivery, ProjectRecord, Store, WebhookRecord } from './store/store.ts';

/**
 * Puts a project's events in the outbox, one delivery per webhook that wants them. A delivery's
 * id comes from the webhook and where the event came from (update, cell, event), so announcing
 * the same event again (a redelivered update that finds its snapshot stored) stores nothing new.
 */
export function createWebhookOutbox({
  store,
  publicUrl,
  logger,
  now = () => new Date(),
}: {
  store: Store;
  publicUrl: string;
  logger: Logger;
  now?: () => Date;
}) {
  const dashboard = (route: string, params: Record<string, string>) =>
    `${publicUrl.replace(/\/+$/, '')}/#/${route}?${new URLSearchParams(params)}`;

  async function enqueue(
    userId: string,
    projectUrl: string,
    events: ReadonlyArray<{ origin: string; payload: WebhookPayload }>,
  ): Promise<number> {
    if (events.length === 0) return 0;
    const hooks = (await store.listWebhooks(userId)).filter(
      (hook) => hook.projectUrl === null || hook.projectUrl === projectUrl,
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

  return {
    /** The budget events of a stored snapshot: one per cell and event, with the checks that changed. */
    async snapshotStored({
      project,
      updateId,
      date,
      results,
    }: {
      project: ProjectRecord;
      updateId: string;
      date: Date;
      results: readonly Pick<LocationSnapshot, 'device' | 'location' | 'checks'>[];
    }): Promise<number> {
      const snapshotDate = formatApiDateTime(date);
      const events = results.flatMap(({ device, location, checks = [] }) =>
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
            dashboardUrl: dashboard('snapshot', { url: project.url, date: snapshotDate }),
          };
          return [{ origin: `${updateId}|${device}|${location}|${event}`, payload }];
        }),
      );
      return enqueue(project.userId, project.url, events);
    },

    /** An update that ended without a snapshot. */
    async updateFailed({
      userId,
      url,
      updateId,
      reason,
    }: {
      userId: string;
      url: string;
      updateId: string;
      reason: string;
    }): Promise<number> {
      const payload: WebhookPayload = {
        event: 'update.failed',
        project: url,
        device: null,
        location: null,
        snapshotDate: null,
        checks: [],
        dashboardUrl: dashboard('project', { url }),
        reason,
        updateId,
      };
      return enqueue(userId, url, [{ origin: `${updateId}|update.failed`, payload }]);
    },
  };
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

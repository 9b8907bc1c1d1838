import { randomBytes } from 'node:crypto';
import { TargetRefused, type TargetGuard } from '@perfwatch/agent';
import { formatApiDateTime, type Webhook } from '@perfwatch/common';
import type { DeliveryRecord, Store, WebhookFormat, WebhookRecord } from './store/store.ts';

/** A webhook that cannot be added: its target is not a URL perfwatch may post to. */
export class WebhookRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookRefused';
  }
}

/** Deliveries listed per webhook. */
export const DELIVERIES_SHOWN = 20;

/**
 * Adds a webhook after its target passes the rules audited pages pass (public addresses only,
 * unless PERFWATCH_ALLOW_TARGETS allows it); each delivery checks the address again, since DNS
 * may answer differently later. Returns the record with its secret, which is shown once.
 */
export async function addWebhook(
  store: Store,
  guard: TargetGuard,
  {
    userId,
    targetUrl,
    projectUrl,
    format,
  }: { userId: string; targetUrl: string; projectUrl: string | null; format: WebhookFormat },
): Promise<WebhookRecord> {
  let url: URL;
  try {
    url = new URL(targetUrl);
  } catch {
    throw new WebhookRefused(`not an absolute URL: ${targetUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new WebhookRefused(`a webhook target is an http(s) URL, not ${url.protocol}`);
  if (url.username || url.password)
    throw new WebhookRefused(
      'a webhook target must not carry credentials (user:password@); put a token in its path or query',
    );
  try {
    await guard.resolve(url.hostname);
  } catch (error) {
    if (error instanceof TargetRefused) throw new WebhookRefused(error.message);
    throw error;
  }
  // 32 random bytes: the receiver's HMAC key.
  const secret = `pwhs_${randomBytes(32).toString('base64url')}`;
  return store.addWebhook({ userId, targetUrl: url.href, projectUrl, format, secret });
}

/** A webhook as the API and the admin CLI show it: never its secret. */
export function webhookView(hook: WebhookRecord, deliveries: readonly DeliveryRecord[]): Webhook {
  return {
    id: hook.id,
    targetUrl: hook.targetUrl,
    project: hook.projectUrl,
    format: hook.format,
    createdAt: formatApiDateTime(hook.createdAt),
    deliveries: deliveries.map((d) => ({
      id: d.id,
      event: d.event,
      status: d.status,
      attempts: d.attempts,
      createdAt: formatApiDateTime(d.createdAt),
      nextAttemptAt: d.status === 'pending' ? formatApiDateTime(d.nextAttemptAt) : null,
      deliveredAt: d.deliveredAt ? formatApiDateTime(d.deliveredAt) : null,
      lastError: d.lastError,
    })),
  };
}

/** A user's webhooks with their newest deliveries. */
export async function listWebhookViews(store: Store, userId: string): Promise<Webhook[]> {
  const hooks = await store.listWebhooks(userId);
  return Promise.all(
    hooks.map(async (hook) => webhookView(hook, await store.listDeliveries(hook.id, DELIVERIES_SHOWN))),
  );
}

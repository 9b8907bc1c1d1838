import { randomBytes } from 'node:crypto';
import { formatApiDateTime, TargetRefused, type Webhook } from '@perfwatch/common';
import type { SecretBox } from '../accounts/secret-box.ts';
import type { DeliveryRecord, WebhookFormat, WebhookRecord, WebhooksStore } from './store/webhooks-store.ts';
import { storedWebhookSecret } from './webhook-secrets.ts';
import { approveWebhookTarget, type WebhookTargets } from './webhook-targets.ts';

/** A webhook that cannot be added: its target is not a URL perfwatch may post to. */
export class WebhookRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookRefused';
  }
}

/** Deliveries listed per webhook. */
const DELIVERIES_SHOWN = 20;

/** What adding a webhook is held to: where it may post, how its secret is kept, how many a user may have. */
export interface WebhookRules {
  targets: WebhookTargets;
  secrets: SecretBox;
  /** WEBHOOK_MAX_PER_USER: past it, WebhookLimitReached (store.ts). */
  maxPerUser: number;
}

/**
 * Adds a webhook after its target passes the rules (webhook-targets.ts: https to public
 * addresses; private ones and plain http only where PERFWATCH_ALLOW_TARGETS allows them); each
 * delivery checks the address again, since DNS may answer differently later. Throws
 * WebhookRefused, or WebhookLimitReached when the user has as many as one may. Returns the
 * record with its secret in the clear, which is shown this once (the store keeps it sealed).
 */
export async function addWebhook(
  store: Pick<WebhooksStore, 'addWebhook'>,
  { targets, secrets, maxPerUser }: WebhookRules,
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
    await approveWebhookTarget(targets, url);
  } catch (error) {
    if (error instanceof TargetRefused) throw new WebhookRefused(error.message);
    throw error;
  }
  // 32 random bytes: the receiver's HMAC key.
  const secret = `pwhs_${randomBytes(32).toString('base64url')}`;
  const stored = await store.addWebhook(
    { userId, targetUrl: url.href, projectUrl, format, secret: storedWebhookSecret(secrets, userId, secret) },
    maxPerUser,
  );
  return { ...stored, secret };
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

/** A user's webhooks (at most WEBHOOK_MAX_PER_USER) with their newest deliveries. */
export async function listWebhookViews(
  store: Pick<WebhooksStore, 'listWebhooks' | 'listDeliveries'>,
  userId: string,
): Promise<Webhook[]> {
  return withDeliveries(store, await store.listWebhooks(userId));
}

/** `after` names no webhook of the caller's (removed since the page before was read). */
export class UnknownCursor extends Error {
  constructor(id: string) {
    super(`no webhook of yours has the id ${id} (removed since?); list again from the start`);
    this.name = 'UnknownCursor';
  }
}

/**
 * A page of a user's webhooks, oldest first: `limit` after the one whose id is `after`, and
 * `next` when more follow. A user has at most WEBHOOK_MAX_PER_USER, so the list is read whole
 * and cut here; what a page costs is its webhooks' deliveries, read for the page alone.
 */
export async function listWebhookPage(
  store: Pick<WebhooksStore, 'listWebhooks' | 'listDeliveries'>,
  userId: string,
  { after, limit }: { after?: string | undefined; limit: number },
): Promise<{ webhooks: Webhook[]; next?: string }> {
  const hooks = await store.listWebhooks(userId);
  const from = after === undefined ? 0 : hooks.findIndex((h) => h.id === after) + 1;
  if (from === 0 && after !== undefined) throw new UnknownCursor(after);
  const page = hooks.slice(from, from + limit);
  const webhooks = await withDeliveries(store, page);
  return from + limit < hooks.length ? { webhooks, next: page.at(-1)!.id } : { webhooks };
}

function withDeliveries(
  store: Pick<WebhooksStore, 'listDeliveries'>,
  hooks: readonly WebhookRecord[],
): Promise<Webhook[]> {
  return Promise.all(
    hooks.map(async (hook) => webhookView(hook, await store.listDeliveries(hook.id, DELIVERIES_SHOWN))),
  );
}

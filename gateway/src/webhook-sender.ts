import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { TargetGuard } from '@perfwatch/agent';
import { DELIVERY_HEADER, SIGNATURE_HEADER, signWebhookBody, PERFWATCH_VERSION } from '@perfwatch/common';
import type { DeliveryRecord, Store } from './store/store.ts';

/**
 * When a failed delivery is tried again: doubling from `firstMs` up to `maxMs`, until
 * `giveUpAfterMs` after the event. The schedule lives in the outbox (each delivery's
 * nextAttemptAt), not in a process, so a retry library's in-memory loop does not fit.
 */
export interface RetryPolicy {
  firstMs: number;
  maxMs: number;
  giveUpAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { firstMs: 5_000, maxMs: 600_000, giveUpAfterMs: 86_400_000 };

export function retryDelayMs(attempts: number, policy: RetryPolicy, random = Math.random): number {
  const base = Math.min(policy.maxMs, policy.firstMs * 2 ** Math.max(0, attempts - 1));
  // ±20 %: deliveries that failed together (a receiver down) do not all come back at once.
  return Math.round(base * (0.8 + 0.4 * random()));
}

export interface WebhookSenderOptions {
  store: Store;
  logger: Logger;
  /** The address rules of audited pages (PERFWATCH_ALLOW_TARGETS), applied to the address connected to. */
  guard: TargetGuard;
  pollMs?: number;
  /** Deliveries taken per poll. */
  batch?: number;
  timeoutMs?: number;
  retry?: RetryPolicy;
  /** Told of each attempt's outcome (metrics). */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed') => void;
  now?: () => Date;
}

/** How an attempt ended: a 2xx is delivered; anything else is a reason to try again. */
type Attempt = { ok: true } | { ok: false; error: string };

const RESPONSE_LIMIT = 64 * 1024;

/**
 * Posts one body. The host is resolved through the guard and the connection made to the
 * address it approved (no second lookup a rebinding name could answer differently); redirects
 * are not followed, so a receiver cannot send the delivery somewhere the rules refuse.
 */
export async function postWebhook(
  target: string,
  body: string,
  headers: Record<string, string>,
  { guard, timeoutMs }: { guard: TargetGuard; timeoutMs: number },
): Promise<Attempt> {
  const url = new URL(target);
  // Resolved (and judged) here, whether a name or an address literal (Node skips `lookup` for those).
  let approved: { address: string; family: 4 | 6 };
  try {
    approved = await guard.resolve(url.hostname);
  } catch (error) {
    return { ok: false, error: (error as Error).message.slice(0, 500) };
  }
  const lookup: LookupFunction = (_host, options, callback) => {
    if (options.all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [approved]);
    else callback(null, approved.address, approved.family);
  };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = send(
      url,
      {
        method: 'POST',
        lookup,
        timeout: timeoutMs,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(body)),
          'User-Agent': `perfwatch-webhooks/${PERFWATCH_VERSION}`,
          ...headers,
        },
      },
      (res: IncomingMessage) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > RESPONSE_LIMIT) res.destroy();
        });
        res.on('close', () => {
          const status = res.statusCode ?? 0;
          resolve(status >= 200 && status < 300 ? { ok: true } : { ok: false, error: `HTTP ${status}` });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (error) => resolve({ ok: false, error: error.message.slice(0, 500) }));
    req.end(body);
  });
}

/**
 * Sends what the outbox holds: due deliveries are claimed (so replicas do not post the same one
 * at once), posted with their signature, and recorded delivered, due again later, or failed
 * for good after the retry policy's day.
 */
export function createWebhookSender({
  store,
  logger,
  guard,
  batch = 10,
  timeoutMs = 10_000,
  retry = DEFAULT_RETRY,
  onAttempt,
  now = () => new Date(),
}: Omit<WebhookSenderOptions, 'pollMs'>) {
  async function attempt(delivery: DeliveryRecord): Promise<void> {
    const hook = (await store.listWebhooks(delivery.userId)).find((h) => h.id === delivery.webhookId);
    if (!hook) {
      await store.recordDeliveryAttempt(delivery.id, { status: 'failed', error: 'the webhook was removed' });
      return;
    }
    const outcome = await postWebhook(
      hook.targetUrl,
      delivery.body,
      { [SIGNATURE_HEADER]: signWebhookBody(hook.secret, delivery.body), [DELIVERY_HEADER]: delivery.id },
      { guard, timeoutMs },
    );
    const log = { delivery: delivery.id, webhook: hook.id, event: delivery.event, attempt: delivery.attempts + 1 };
    if (outcome.ok) {
      await store.recordDeliveryAttempt(delivery.id, { status: 'delivered', at: now() });
      logger.info(log, 'webhook delivered');
      onAttempt?.('delivered');
      return;
    }
    const nextAttemptAt = new Date(now().getTime() + retryDelayMs(delivery.attempts + 1, retry));
    if (nextAttemptAt.getTime() - delivery.createdAt.getTime() > retry.giveUpAfterMs) {
      await store.recordDeliveryAttempt(delivery.id, { status: 'failed', error: outcome.error });
      logger.warn({ ...log, error: outcome.error }, 'webhook delivery given up');
      onAttempt?.('failed');
      return;
    }
    await store.recordDeliveryAttempt(delivery.id, { status: 'pending', error: outcome.error, nextAttemptAt });
    logger.info({ ...log, error: outcome.error, nextAttemptAt }, 'webhook delivery failed; will retry');
    onAttempt?.('retry');
  }

  /** One round: every due delivery claimed now, posted in parallel. */
  async function sendDue(): Promise<number> {
    const due = await store.claimDeliveries(now(), batch, timeoutMs * 3);
    await Promise.all(
      due.map((d) =>
        attempt(d).catch((error: unknown) =>
          logger.error({ delivery: d.id, err: error }, 'webhook delivery could not be recorded'),
        ),
      ),
    );
    return due.length;
  }

  return { sendDue, batch };
}

/** The sender, polling the outbox every `pollMs` beside the updates, never in their way. */
export function startWebhookSender({ pollMs = 1_000, ...options }: WebhookSenderOptions) {
  const { sendDue, batch } = createWebhookSender(options);
  const { logger } = options;
  const stopped = new AbortController();
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      try {
        // A full batch: more may be due, so no pause.
        if ((await sendDue()) === batch) continue;
      } catch (error) {
        logger.warn({ err: error }, 'webhook outbox not readable; trying again');
      }
      await sleep(pollMs, undefined, { signal: stopped.signal }).catch(() => undefined);
    }
  })();

  return {
    sendDue,
    async stop(): Promise<void> {
      stopped.abort();
      await loop;
    },
  };
}

import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { DELIVERY_HEADER, SIGNATURE_HEADER, signWebhookBody } from '@perfwatch/common';
import { SecretKeyError, type SecretBox } from '../accounts/secret-box.ts';
import type { DeliveryRecord, WebhookRecord, WebhooksStore } from './store/webhooks-store.ts';
import { openWebhookSecret } from './webhook-secrets.ts';
import { postWebhook, type Attempt } from './webhook-post.ts';
import type { WebhookTargets } from './webhook-targets.ts';

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

export function retryDelayMs(attempts: number, policy: RetryPolicy, random = Math.random): number {
  const base = Math.min(policy.maxMs, policy.firstMs * 2 ** Math.max(0, attempts - 1));
  // ±20 %: deliveries that failed together (a receiver down) do not all come back at once.
  return Math.round(base * (0.8 + 0.4 * random()));
}

export interface WebhookSenderOptions {
  store: Pick<WebhooksStore, 'findWebhook' | 'recordDeliveryAttempt' | 'claimDeliveries' | 'deleteDeliveriesBefore'>;
  logger: Logger;
  /** Where deliveries may go (webhook-targets.ts), applied to the address connected to. */
  targets: WebhookTargets;
  /** Opens the sealed secrets deliveries are signed with. */
  secrets: SecretBox;
  /** How often the outbox is looked at (WEBHOOK_POLL_MS). */
  pollMs: number;
  /** Deliveries this gateway posts at once, all users together (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** Deliveries of one user this gateway posts at once (WEBHOOK_IN_FLIGHT_PER_USER). */
  perUser: number;
  /** The most one POST may take, all of it: resolving, connecting, sending, the whole answer (WEBHOOK_DEADLINE_MS). */
  deadlineMs: number;
  /** WEBHOOK_RETRY_FIRST_MS, WEBHOOK_RETRY_MAX_MS, WEBHOOK_GIVE_UP_AFTER_MS. */
  retry: RetryPolicy;
  /** Delivered and failed deliveries older than this are deleted (WEBHOOK_DELIVERY_RETENTION_DAYS); absent: kept. */
  retentionMs?: number;
  /** How often that is done (RETENTION_EVERY_MS, as for snapshots); absent: never. */
  pruneEveryMs?: number;
  /** Told of each attempt's outcome (metrics). */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed') => void;
  now?: () => Date;
}

/**
 * How long a claim holds a delivery from other senders: twice the deadline. A post starts
 * within the first half (an attempt whose reading of its webhook took longer does not post) and
 * is cut at the deadline, so it is over before the claim ends; what is left covers recording the
 * outcome and clocks of replicas a few seconds apart. Claims are only taken for a free place,
 * so none waits in a queue of this process while its claim runs.
 */
export const claimLeaseMs = (deadlineMs: number): number => 2 * deadlineMs;

/** What the sender records an attempt by: the outbox, its log, the retry policy and the clock. */
interface AttemptRecording {
  store: Pick<WebhooksStore, 'recordDeliveryAttempt'>;
  logger: Logger;
  retry: RetryPolicy;
  onAttempt: WebhookSenderOptions['onAttempt'];
  now: () => Date;
}

/** Records how a post ended: delivered, due again after the retry delay, or failed for good past the policy's day. */
async function recordOutcome(
  { store, logger, retry, onAttempt, now }: AttemptRecording,
  delivery: DeliveryRecord,
  outcome: Attempt,
  log: Record<string, unknown>,
): Promise<void> {
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

/** The post, signed at this moment (`t` in the signature is when it was sent, not when the event happened). */
async function signedPost(
  hook: WebhookRecord,
  delivery: DeliveryRecord,
  {
    secrets,
    targets,
    deadlineMs,
    now,
  }: { secrets: SecretBox; targets: WebhookTargets; deadlineMs: number; now: () => Date },
): Promise<Attempt> {
  let secret: string;
  try {
    secret = openWebhookSecret(secrets, hook);
  } catch (error) {
    if (!(error instanceof SecretKeyError)) throw error;
    return { ok: false, error: `the webhook's signing secret cannot be opened: ${error.message}` };
  }
  const signature = signWebhookBody(secret, delivery.body, Math.floor(now().getTime() / 1000));
  return postWebhook(
    hook.targetUrl,
    delivery.body,
    { [SIGNATURE_HEADER]: signature, [DELIVERY_HEADER]: delivery.id },
    { targets, deadlineMs },
  );
}

/**
 * The posts in flight, all users together and per user; a post's place frees when it ends.
 *
 * Places are counted here rather than with p-limit (a dependency already): p-limit queues work
 * given to it, and a claimed delivery must not queue, since its claim runs from the moment it
 * is taken; called only with a place free, it would be a counter, which this is.
 */
function createDeliveryPlaces() {
  const inFlight = new Set<Promise<void>>();
  const perUserInFlight = new Map<string, number>();
  return {
    get size() {
      return inFlight.size;
    },
    /** Users with `perUser` posts in flight or more. */
    busyUsers: (perUser: number): string[] =>
      [...perUserInFlight].filter(([, count]) => count >= perUser).map(([user]) => user),
    /** Takes a place of `user` and starts `work` in it; the place frees when the work ends. */
    hold(user: string, work: () => Promise<void>): void {
      perUserInFlight.set(user, (perUserInFlight.get(user) ?? 0) + 1);
      const running: Promise<void> = work().finally(() => {
        inFlight.delete(running);
        const left = perUserInFlight.get(user)! - 1;
        if (left === 0) perUserInFlight.delete(user);
        else perUserInFlight.set(user, left);
      });
      inFlight.add(running);
    },
    /** Settles when a post in flight ends (a place frees); never while none is in flight. */
    freed: (): Promise<void> => (inFlight.size > 0 ? Promise.race(inFlight) : new Promise<void>(() => {})),
    /** Settles when every post in flight has ended and been recorded. */
    async drain(): Promise<void> {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}

/**
 * Sends what the outbox holds: a due delivery is claimed when a place is free for it (so
 * replicas do not post the same one at once, and no claim runs out while it waits here), posted
 * with its signature, and recorded delivered, due again later, or failed for good after the
 * retry policy's day. At most `concurrency` posts at once, and `perUser` of one user's: a user
 * whose receivers hang, or who has thousands due, holds that many places and no more.
 */
export function createWebhookSender({
  store,
  logger,
  targets,
  secrets,
  concurrency,
  perUser,
  deadlineMs,
  retry,
  onAttempt,
  now = () => new Date(),
}: Omit<WebhookSenderOptions, 'pollMs' | 'retentionMs' | 'pruneEveryMs'>) {
  const leaseMs = claimLeaseMs(deadlineMs);
  const places = createDeliveryPlaces();
  const recording: AttemptRecording = { store, logger, retry, onAttempt, now };

  async function attempt(delivery: DeliveryRecord, claimedAt: number): Promise<void> {
    const hook = await store.findWebhook(delivery.webhookId);
    if (!hook) {
      await store.recordDeliveryAttempt(delivery.id, { status: 'failed', error: 'the webhook was removed' });
      return;
    }
    const log = { delivery: delivery.id, webhook: hook.id, event: delivery.event, attempt: delivery.attempts + 1 };
    if (performance.now() - claimedAt > leaseMs - deadlineMs) {
      // Posting now could outlast the claim; it runs out and the delivery is taken again.
      logger.warn(log, 'webhook delivery not posted: reading its webhook took most of its claim');
      return;
    }
    const outcome = await signedPost(hook, delivery, { secrets, targets, deadlineMs, now });
    await recordOutcome(recording, delivery, outcome, log);
  }

  /**
   * Claims due deliveries one at a time while a place is free, skipping users with `perUser` in
   * flight, and starts each at once; returns how many it started, without waiting for them.
   */
  async function fill(): Promise<number> {
    let started = 0;
    while (places.size < concurrency) {
      const [delivery] = await store.claimDeliveries(now(), 1, leaseMs, places.busyUsers(perUser));
      if (!delivery) break;
      places.hold(delivery.userId, () =>
        attempt(delivery, performance.now()).catch((error: unknown) =>
          logger.error({ delivery: delivery.id, err: error }, 'webhook delivery could not be recorded'),
        ),
      );
      started += 1;
    }
    return started;
  }

  return {
    fill,
    /** Settles when a post in flight ends (a place frees); never while none is in flight. */
    placeFreed: places.freed,
    /** Settles when every post in flight has ended and been recorded. */
    drain: places.drain,
    /** One round (tests): what is due and fits, posted and recorded; how many were taken. */
    async sendDue(): Promise<number> {
      const started = await fill();
      await places.drain();
      return started;
    },
  };
}

/**
 * The sender, beside the updates and never in their way: it fills free places whenever the
 * outbox is looked at (every `pollMs`) and whenever a post ends, so the next due delivery starts
 * as soon as a place frees, not when a whole round has ended. Also prunes old deliveries.
 */
export function startWebhookSender({ pollMs, retentionMs, pruneEveryMs, ...options }: WebhookSenderOptions) {
  const sender = createWebhookSender(options);
  const { logger, store, now = () => new Date() } = options;
  const stopped = new AbortController();
  let lastPrune = -Infinity;
  let pruning = false;

  function prune(): void {
    if (retentionMs === undefined || pruneEveryMs === undefined) return;
    if (pruning || performance.now() - lastPrune < pruneEveryMs) return;
    lastPrune = performance.now();
    pruning = true;
    const before = new Date(now().getTime() - retentionMs);
    store
      .deleteDeliveriesBefore(before)
      .then((deleted) => {
        if (deleted > 0) logger.info({ deleted, before }, 'deleted webhook deliveries past retention');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'webhook deliveries past retention not deleted'))
      .finally(() => (pruning = false));
  }

  const loop = (async () => {
    while (!stopped.signal.aborted) {
      prune();
      try {
        await sender.fill();
      } catch (error) {
        logger.warn({ err: error }, 'webhook outbox not readable; trying again');
      }
      await Promise.race([
        sleep(pollMs, undefined, { signal: stopped.signal }).catch(() => undefined),
        sender.placeFreed(),
      ]);
    }
  })();

  return {
    /** Stops taking deliveries; those in flight end (within their deadline) and are recorded. */
    async stop(): Promise<void> {
      stopped.abort();
      await loop;
      await sender.drain();
    },
  };
}

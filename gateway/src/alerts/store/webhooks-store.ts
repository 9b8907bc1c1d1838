import { z } from 'zod';
import { ownId, type StoredForms } from '../../store/record-forms.ts';

const WEBHOOK_FORMATS = ['json', 'slack'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

export interface WebhookRecord {
  id: string;
  userId: string;
  targetUrl: string;
  /** Only this project's events; null: every project of the user. */
  projectUrl: string | null;
  format: WebhookFormat;
  /**
   * The HMAC key, which signing needs (it cannot be a digest as API tokens are): sealed under
   * PERFWATCH_SECRETS_KEY (`pwsec1.…`, webhook-secrets.ts), or as it is (`pwhs_…`) when stored
   * without a key or before secrets were sealed. Both forms are read.
   */
  secret: string;
  createdAt: Date;
}

export type NewWebhook = Omit<WebhookRecord, 'id' | 'createdAt'>;

const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event for one webhook, in the outbox until delivered or given up on. */
export interface DeliveryRecord {
  /** Derived from the webhook and the event's origin, so announcing it twice stores it once. */
  id: string;
  webhookId: string;
  userId: string;
  event: string;
  /** The exact body posted (and signed), fixed when the event happened. */
  body: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

export type NewDelivery = Pick<DeliveryRecord, 'id' | 'webhookId' | 'userId' | 'event' | 'body' | 'createdAt'>;

/** What one attempt at a delivery came to; `attempts` grows by one. */
export type DeliveryAttempt =
  | { status: 'delivered'; at: Date }
  | { status: 'pending'; error: string; nextAttemptAt: Date }
  | { status: 'failed'; error: string };

/** Raised when a user already has as many webhooks as one may have. */
export class WebhookLimitReached extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`you have ${limit} webhooks, as many as one user may have; remove one first`);
    this.name = 'WebhookLimitReached';
    this.limit = limit;
  }
}

/** Webhooks and their outbox of deliveries. */
export interface WebhooksStore {
  /**
   * Adds a webhook; WebhookLimitReached when its user would have more than `maxPerUser`. Never
   * more, however many adds race (one of them may be refused although the other is then removed).
   */
  addWebhook(webhook: NewWebhook, maxPerUser?: number): Promise<WebhookRecord>;
  /** One webhook by its id, or null: what a delivery attempt reads (not the user's whole list). */
  findWebhook(id: string): Promise<WebhookRecord | null>;
  /** Replaces the stored form of a webhook's secret (sealed again under a new key). */
  setWebhookSecret(id: string, secret: string): Promise<void>;
  /** A user's webhooks, oldest first. */
  listWebhooks(userId: string): Promise<WebhookRecord[]>;
  /** Removes a webhook of the user with its deliveries; false when the user has none with that id. */
  removeWebhook(userId: string, id: string): Promise<boolean>;
  /** Puts deliveries in the outbox, due now; one already there (same id) is left as it is. */
  enqueueDeliveries(deliveries: readonly NewDelivery[]): Promise<void>;
  /**
   * Takes up to `limit` pending deliveries due by `now`, earliest due first, each held (not due)
   * until now + leaseMs so another sender, on this gateway or another, does not post it
   * meanwhile; none of the users in `exceptUsers` (those with enough in flight already).
   */
  claimDeliveries(
    now: Date,
    limit: number,
    leaseMs: number,
    exceptUsers?: readonly string[],
  ): Promise<DeliveryRecord[]>;
  recordDeliveryAttempt(id: string, attempt: DeliveryAttempt): Promise<void>;
  /** A webhook's newest deliveries, newest first. */
  listDeliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]>;
  /** Deletes delivered and failed deliveries created before `before` (pending ones stay); how many. */
  deleteDeliveriesBefore(before: Date): Promise<number>;
}

/** A delivery as it enters the outbox: pending, due at once, never tried. */
export const queuedDelivery = (d: NewDelivery): Omit<DeliveryRecord, 'id' | 'webhookId' | 'userId'> => ({
  event: d.event,
  body: d.body,
  status: 'pending',
  attempts: 0,
  nextAttemptAt: d.createdAt,
  lastError: null,
  createdAt: d.createdAt,
  deliveredAt: null,
});

/** What an attempt changes of its delivery (besides counting it). */
export function attemptChanges(
  attempt: DeliveryAttempt,
): Partial<Pick<DeliveryRecord, 'status' | 'deliveredAt' | 'nextAttemptAt' | 'lastError'>> {
  if (attempt.status === 'delivered') return { status: 'delivered', deliveredAt: attempt.at, lastError: null };
  if (attempt.status === 'pending') return { nextAttemptAt: attempt.nextAttemptAt, lastError: attempt.error };
  return { status: 'failed', lastError: attempt.error };
}

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function webhookRecords(forms: StoredForms) {
  const { id, time } = forms;
  const webhook = z.object({
    ...ownId(forms),
    userId: id,
    targetUrl: z.string(),
    projectUrl: z.string().nullable(),
    format: z.enum(WEBHOOK_FORMATS),
    secret: z.string(),
  }) satisfies z.ZodType<WebhookRecord>;
  const delivery = z.object({
    // The delivery's own key, not a generated id: its webhook and event.
    id: z.string(),
    webhookId: id,
    userId: id,
    event: z.string(),
    body: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    nextAttemptAt: time,
    lastError: z.string().nullable().default(null),
    createdAt: time,
    deliveredAt: time.nullable().default(null),
  }) satisfies z.ZodType<DeliveryRecord>;
  return { webhook, delivery };
}

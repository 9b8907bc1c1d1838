import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { cellCheckSchema } from './budgets.ts';
import { DEVICES, LOCATIONS } from './ids.ts';

const WEBHOOK_EVENTS = ['budget.failed', 'budget.recovered', 'update.failed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The headers of every delivery. */
export const SIGNATURE_HEADER = 'X-Perfwatch-Signature';
export const DELIVERY_HEADER = 'X-Perfwatch-Delivery';

/** What a `json` webhook receives, exactly as signed. */
export const webhookPayloadSchema = z
  .object({
    event: z.enum(WEBHOOK_EVENTS),
    /** The project's URL. */
    project: z.string(),
    /** Null for update.failed, which is about the whole update. */
    device: z.enum(DEVICES).nullable(),
    location: z.enum(LOCATIONS).nullable(),
    /** The snapshot's date (yyyy-MM-ddTHH:mm:ss, UTC); null for update.failed. */
    snapshotDate: z.string().nullable(),
    /** The checks whose state changed: failed ones for budget.failed, passing ones for budget.recovered. */
    checks: z.array(cellCheckSchema),
    dashboardUrl: z.string(),
    /** update.failed: why, and which update. */
    reason: z.string().optional(),
    updateId: z.string().optional(),
  })
  .meta({ id: 'WebhookPayload' });
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;

/**
 * How far a delivery's signed time may be from the receiver's clock, in seconds, before
 * verifyWebhookSignature refuses it (Stripe's tolerance): a body captured on the way cannot be
 * replayed later than this. Each attempt is signed when it is sent, so a retry is never stale.
 */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/**
 * The value of X-Perfwatch-Signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`,
 * as Stripe signs: the time is signed with the body, so neither can be changed alone.
 */
export function signWebhookBody(secret: string, body: string | Buffer, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${signatureOf(secret, unixSeconds, body)}`;
}

function signatureOf(secret: string, unixSeconds: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
}

/**
 * What a receiver does with a delivery: read `t` and every `v1` from the header, refuse a `t`
 * further than `toleranceSeconds` from now, recompute the HMAC over `t.body` and compare in
 * constant time. More than one `v1` may come (a secret being replaced); one match is enough.
 */
export function verifyWebhookSignature(
  secret: string,
  body: string | Buffer,
  header: string | undefined,
  {
    toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
    now = Date.now(),
  }: { toleranceSeconds?: number; now?: number } = {},
): boolean {
  if (!header) return false;
  const parts = header.split(',').map((part) => part.trim().split('='));
  const stamps = parts.filter(([key, value]) => key === 't' && /^\d{1,12}$/.test(value ?? ''));
  if (stamps.length !== 1) return false;
  const unixSeconds = Number(stamps[0]![1]);
  if (Math.abs(now / 1000 - unixSeconds) > toleranceSeconds) return false;
  const expected = Buffer.from(signatureOf(secret, unixSeconds, body));
  return parts
    .filter(([key]) => key === 'v1')
    .some(([, value]) => {
      const given = Buffer.from(value ?? '');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

const deliverySchema = z
  .object({
    id: z.string(),
    event: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int().nonnegative(),
    createdAt: z.string(),
    nextAttemptAt: z.string().nullable(),
    deliveredAt: z.string().nullable(),
    lastError: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

const webhookSchema = z
  .object({
    id: z.string(),
    targetUrl: z.string(),
    /** Only this project's events; null: every project of the owner. */
    project: z.string().nullable(),
    format: z.enum(['json', 'slack']),
    createdAt: z.string(),
    /** The newest deliveries, newest first. */
    deliveries: z.array(deliverySchema),
  })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof webhookSchema>;

/**
 * `/v1/webhooks`' answer: a page of the caller's webhooks, oldest first; `created` with its secret
 * (shown this once) after an add; `next`, when more follow, the `after` that asks for them.
 */
export const webhookListSchema = z
  .object({
    webhooks: z.array(webhookSchema),
    next: z.string().optional(),
    created: webhookSchema.extend({ secret: z.string() }).optional(),
    removed: z.string().optional(),
  })
  .meta({ id: 'WebhookList' });
export type WebhookList = z.infer<typeof webhookListSchema>;

import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { cellCheckSchema } from './budgets.ts';
import { DEVICES, LOCATIONS } from './ids.ts';

export const WEBHOOK_EVENTS = ['budget.failed', 'budget.recovered', 'update.failed'] as const;
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

/** `sha256=<hex HMAC-SHA256 of the raw body>`: the value of X-Perfwatch-Signature. */
export function signWebhookBody(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** What a receiver does with a delivery: recompute the signature over the raw body, compare in constant time. */
export function verifyWebhookSignature(secret: string, body: string | Buffer, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(signWebhookBody(secret, body));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export const deliverySchema = z
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
export type Delivery = z.infer<typeof deliverySchema>;

export const webhookSchema = z
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

/** `/v1/webhooks`' answer: the caller's webhooks; `created` with its secret (shown this once) after an add. */
export const webhookListSchema = z
  .object({
    webhooks: z.array(webhookSchema),
    created: webhookSchema.extend({ secret: z.string() }).optional(),
    removed: z.string().optional(),
  })
  .meta({ id: 'WebhookList' });
export type WebhookList = z.infer<typeof webhookListSchema>;

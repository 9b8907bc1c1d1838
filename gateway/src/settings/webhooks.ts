import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

const ms = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const count = () => z.coerce.number().int().min(1).max(1_000);

/** Webhooks: how many a user may have, and how their deliveries are posted and tried again. */
export const webhookSettings = settingGroup('Webhooks', {
  // 20: GitHub's cap per repository.
  WEBHOOK_MAX_PER_USER: count().default(20).describe('Webhooks one user may have; adding past it is refused (400).'),
  WEBHOOK_RETRY_FIRST_MS: ms(100, 3_600_000)
    .default(5_000)
    .describe(
      'A failed delivery is tried again after this long, doubling up to WEBHOOK_RETRY_MAX_MS, for WEBHOOK_GIVE_UP_AFTER_MS.',
    ),
  WEBHOOK_RETRY_MAX_MS: ms(100, 86_400_000).default(600_000).describe('The longest wait between two tries.'),
  WEBHOOK_GIVE_UP_AFTER_MS: ms(1_000, 7 * 86_400_000)
    .default(86_400_000)
    .describe('How long after its event a delivery is given up, marked failed.'),
  WEBHOOK_POLL_MS: ms(50, 60_000).default(1_000).describe('How often the outbox is looked at for due deliveries.'),
  WEBHOOK_DEADLINE_MS: ms(1_000, 60_000)
    .default(10_000)
    .describe(
      'The most one webhook POST may take, all of it (resolving, connecting, sending, the whole answer); a ' +
        "delivery's claim lasts twice this, so no other replica takes one still in flight.",
    ),
  WEBHOOK_CONCURRENCY: count()
    .default(16)
    .describe('Webhook deliveries one gateway posts at once, all users together.'),
  WEBHOOK_IN_FLIGHT_PER_USER: count().default(2).describe('Webhook deliveries of one user one gateway posts at once.'),
  WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce
    .number()
    .min(1)
    .max(3_650)
    .default(30)
    .describe('Delivered and failed webhook deliveries older than this are deleted (every RETENTION_EVERY_MS).'),
});

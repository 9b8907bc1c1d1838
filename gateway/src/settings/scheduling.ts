import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

/** The scheduler of projects' updates, and how long what they store is kept. */
export const schedulingSettings = settingGroup('Schedule and retention', {
  SCHEDULER_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(15_000)
    .describe('How often the scheduler looks for due projects (and renews its lease).'),
  SCHEDULER_LEASE_TTL_MS: z.coerce
    .number()
    .int()
    .min(500)
    .max(3_600_000)
    .default(45_000)
    .describe('A scheduler that stops renewing loses its lease after this long; another gateway takes over.'),
  RETENTION_DAYS: z.coerce
    .number()
    .min(1)
    .max(36_500)
    .default(400)
    .describe('Snapshots older than this are deleted, with their KPI records.'),
  RETENTION_EVERY_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(3_600_000)
    .describe('How often old snapshots and webhook deliveries are deleted.'),
  MAX_SITE_DISCOVERIES_AT_ONCE: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(2)
    .describe(
      "Sites' page discoveries one gateway runs at once (each may read for up to two minutes); the others wait their turn.",
    ),
});

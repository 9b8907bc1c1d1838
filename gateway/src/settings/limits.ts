import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';
import { DEFAULT_HEAVY_READS } from '../snapshots/heavy-reads.ts';

const perMinute = () => z.coerce.number().int().positive();

/** What one user, one client address or one gateway may ask of it at once or per minute. */
export const limitSettings = settingGroup('Limits', {
  RATE_LIMIT_UPDATES_PER_MINUTE: perMinute()
    .default(60)
    .describe('Requests to /v1/update one user (all of its tokens) may make a minute; past it, 429.'),
  RATE_LIMIT_READS_PER_MINUTE: perMinute()
    .default(600)
    .describe('Requests to every other endpoint one user may make a minute; past it, 429.'),
  AUTH_FAILURES_PER_MINUTE: perMinute()
    .default(30)
    .describe('Failed authentications one client address may make a minute; past it, 429 for the rest of the minute.'),
  MAX_HEAVY_READS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(DEFAULT_HEAVY_READS)
    .describe(
      'Reads of stored results (/v1/audit, /v1/compare) one gateway runs at once; more wait up to 5 s, then ' +
        'get 503 with Retry-After. Each may hold 32 MiB: the default is what the 512 MiB container limit leaves them; raise it with the limit.',
    ),
  MAX_SYNC_UPDATES_PER_USER: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(2)
    .describe('Sync updates one user has in flight at once, all replicas together; past it, 429.'),
  MAX_ACTIVE_UPDATES_PER_USER: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(2)
    .describe(
      "A user's async and scheduled updates in the queue (waiting for a gateway, or running) at once, all " +
        "replicas together; the rest wait in the user's backlog, in order.",
    ),
  MAX_QUEUED_RUNS_PER_USER: z.coerce
    .number()
    .int()
    .min(1)
    .default(5_000)
    .describe("Runs (cells × runs per cell) one user's unfinished async and scheduled updates may hold; past it, 429."),
  // Each site holds up to 1,000 pages, their projects and discoveries: the cap bounds what one organisation's editors make.
  MAX_SITES_PER_ORG: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(20)
    .describe('Sites one organisation may have; adding one past it is refused (400).'),
  MAX_PENDING_UPDATES_PER_LOCATION: z.coerce
    .number()
    .int()
    .min(1)
    .default(1_000)
    .describe('Async updates queued or running per location before new ones get 429.'),
});

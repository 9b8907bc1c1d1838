import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

const ms = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** How the gateway runs updates: its runs on agents, and the durable queue of async ones. */
export const updateSettings = settingGroup('Updates and runs', {
  RUN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(270_000, 'at most 270000 (the shipped NATS reply window is 5 minutes; raise it in deploy/nats first)')
    .default(120_000)
    .describe(
      'Time an agent may spend on one Lighthouse run. The gateway waits this plus 30 s for the reply, which ' +
        "NATS's reply window must cover (shipped: 5 minutes, so at most 270000).",
    ),
  MAX_RETESTS: z.coerce
    .number()
    .int()
    .min(0)
    .max(5)
    .default(2)
    .describe(
      'Extra runs an update may make per device and location to measure suspect runs again; 0 keeps suspect runs ' +
        'as they are, marked.',
    ),
  SYNC_UPDATE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(600_000)
    .describe('Time a sync update may wait for its runs, queueing included.'),
  MAX_RUNS_IN_FLIGHT: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(256)
    .describe(
      'Runs this gateway has offered to agents and awaits at once; more wait in the gateway (perfwatch_queue_depth). ' +
        'Bounds the unread replies nats-server holds for it: past its max_pending (64 MB) every reply in flight ' +
        'is lost, so keep it near the capacity of the agents it dispatches to.',
    ),
  UPDATE_WORKERS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(16)
    .describe(
      'Queued updates one gateway runs at once. A running update mostly waits for agents, so there are enough for ' +
        "every busy user's MAX_ACTIVE_UPDATES_PER_USER with places to spare.",
    ),
  UPDATE_ACK_WAIT_MS: ms(1_000, 3_600_000)
    .default(60_000)
    .describe("A queued update's job goes to another gateway after this long without a sign of life."),
  UPDATE_MAX_DELIVER: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(5)
    .describe('Deliveries of a queued update before it is marked failed.'),
  UPDATE_RETRY_DELAY_MS: ms(0, 3_600_000)
    .default(30_000)
    .describe('How long a queued update that failed waits before it is delivered again.'),
  UPDATE_DEADLINE_MS: ms(1_000, 86_400_000)
    .default(1_800_000)
    .describe(
      'An async or scheduled update offers a location whose agents are away (restarting, cut off) again until this ' +
        'long after it was accepted; then it is stored with that location missing.',
    ),
  UPDATE_SWEEP_EVERY_MS: ms(100, 3_600_000)
    .default(60_000)
    .describe("How often the scheduler's lease holder looks for updates nothing will finish."),
  UPDATE_STUCK_AFTER_MS: ms(1_000, 86_400_000)
    .default(120_000)
    .describe(
      'An unfinished update untouched for this long whose job the queue no longer holds is queued again (failed ' +
        'once past its deadline).',
    ),
});

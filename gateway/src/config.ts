import { z } from 'zod';
import { LOCATIONS, logLevelSchema, natsEnvSchema, parseEnv, type Location } from '@perfwatch/common';
import { DEFAULT_MAX_RUNS_IN_FLIGHT } from './dispatch/nats/nats-dispatcher.ts';
import { DEFAULT_HEAVY_READS } from './snapshots/heavy-reads.ts';
import { DEFAULT_MAX_WEBHOOKS_PER_USER } from './alerts/webhook-registry.ts';
import { SENDER_DEFAULTS } from './alerts/webhook-sender.ts';

export const gatewayEnvSchema = natsEnvSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /**
   * Set: `/metrics` and `/readyz` (and `/healthz`) are served on this port only, as agents do,
   * so the public port behind an ingress does not expose them. Unset: on PORT.
   */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  OPS_HOST: z.string().min(1).default('0.0.0.0'),
  HOST: z.string().min(1).default('0.0.0.0'),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// or mongodb+srv:// URI')
    .default('mongodb://127.0.0.1:27017/'),
  MONGODB_DB: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,63}$/, 'must be a database name')
    .default('perfwatch'),
  /**
   * Set: the store is the embedded file PERFWATCH_DATA_DIR/perfwatch.sqlite instead of MongoDB,
   * for a fleet served by one gateway replica (the file belongs to one process).
   */
  PERFWATCH_DATA_DIR: z.string().min(1).optional(),
  LOG_LEVEL: logLevelSchema,
  /**
   * Time an agent may spend on one Lighthouse run (DESIGN.md: 120 s). At most 270 s: the shipped
   * NATS files let a job be answered for 5 minutes (deploy/nats), and the gateway waits this
   * plus 30 s for the reply; past that, replies would be dropped unseen.
   */
  RUN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(270_000, 'at most 270000 (the shipped NATS reply window is 5 minutes; raise it in deploy/nats first)')
    .default(120_000),
  /**
   * Extra runs an update may make per device and location to measure suspect runs again
   * (run-verdicts.ts); 0 keeps suspect runs as they are, marked.
   */
  MAX_RETESTS: z.coerce.number().int().min(0).max(5).default(2),
  /** Time a sync update may wait for its runs, queueing included (DESIGN.md: 10 min). */
  SYNC_UPDATE_TIMEOUT_MS: z.coerce.number().int().positive().default(600_000),
  RATE_LIMIT_UPDATES_PER_MINUTE: z.coerce.number().int().positive().default(60),
  RATE_LIMIT_READS_PER_MINUTE: z.coerce.number().int().positive().default(600),
  /** Failed authentications one client address may make a minute; past it, 429 for the rest of the minute. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(30),
  /**
   * Behind a load balancer or ingress: Express's `trust proxy` (a hop count such as 1, or
   * addresses such as "loopback, uniquelocal"), so the client address is X-Forwarded-For's.
   * Unset: the socket's address.
   */
  TRUST_PROXY: z
    .string()
    .min(1)
    .transform((v): boolean | number | string =>
      /^\d+$/.test(v) ? Number(v) : v === 'true' ? true : v === 'false' ? false : v,
    )
    .optional(),
  /** CrUX API key; without one, snapshots carry no field data and no CRUX KPI records. */
  CRUX_API_KEY: z.string().min(1).optional(),
  CRUX_API_ENDPOINT: z.url().default('https://chromeuxreport.googleapis.com'),
  /** With a CrUX key: how often projects added since are given their 25 weeks of field-data history. */
  FIELD_HISTORY_EVERY_MS: z.coerce.number().int().min(100).max(86_400_000).default(60_000),
  /** A client must send its headers within this long, and its whole request within REQUEST_TIMEOUT_MS; else 408. */
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(10_000),
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /** An overview reader that reads nothing for this long is cut off and its cursor released. */
  OVERVIEW_STALL_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /**
   * Reads of stored results (/v1/audit, /v1/compare) one gateway runs at once; more wait a few
   * seconds, then get 503. Each may hold 32 MiB: the default, 4, is what the 512 MiB container
   * limit leaves them (heavy-reads.ts); raise it with the limit.
   */
  MAX_HEAVY_READS: z.coerce.number().int().min(1).max(1_000).default(DEFAULT_HEAVY_READS),
  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/, 'must look like 100kb')
    .default('100kb'),
  /**
   * Queued updates one gateway runs at once. A running update mostly waits for agents (what
   * bounds the runs is the agents' capacity and MAX_RUNS_IN_FLIGHT), so there are enough for
   * every busy user's MAX_ACTIVE_UPDATES_PER_USER with places to spare: a newcomer's update is
   * taken up at once, not after someone else's update ends.
   */
  UPDATE_WORKERS: z.coerce.number().int().min(1).max(1000).default(16),
  /**
   * A user's async and scheduled updates in the queue (waiting for a gateway, or running) at
   * once, all replicas together; the rest wait in the user's backlog, in order.
   */
  MAX_ACTIVE_UPDATES_PER_USER: z.coerce.number().int().min(1).max(1000).default(2),
  /** Runs (cells × runs per cell) one user's unfinished async and scheduled updates may hold; past it, 429. */
  MAX_QUEUED_RUNS_PER_USER: z.coerce.number().int().min(1).default(5_000),
  /** Sync updates one user has in flight at once, all replicas together; past it, 429. */
  MAX_SYNC_UPDATES_PER_USER: z.coerce.number().int().min(1).max(1000).default(2),
  /** A queued update's job goes to another gateway after this long without a sign of life. */
  UPDATE_ACK_WAIT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  /** Deliveries of a queued update before it is marked failed. */
  UPDATE_MAX_DELIVER: z.coerce.number().int().min(1).max(100).default(5),
  UPDATE_RETRY_DELAY_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  /**
   * An async or scheduled update offers a location whose agents are away (restarting, cut off)
   * again until this long after it was accepted; then it is stored with that location missing.
   */
  UPDATE_DEADLINE_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(1_800_000),
  /** How often the scheduler's lease holder looks for updates nothing will finish. */
  UPDATE_SWEEP_EVERY_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  /**
   * An unfinished update untouched for this long whose job the queue no longer holds is queued
   * again (failed once past its deadline); well above the moment between recording and queueing.
   */
  UPDATE_STUCK_AFTER_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(120_000),
  /**
   * Runs this gateway has offered to agents and awaits at once; more wait in the gateway
   * (perfwatch_queue_depth). Bounds the unread replies nats-server holds for it (max_pending).
   */
  MAX_RUNS_IN_FLIGHT: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_MAX_RUNS_IN_FLIGHT),
  /** Async updates queued or running per location before new ones get 429. */
  MAX_PENDING_UPDATES_PER_LOCATION: z.coerce.number().int().min(1).default(1_000),
  /** How often the scheduler looks for due projects (and renews its lease). */
  SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  /** A scheduler that stops renewing loses its lease after this long; another gateway takes over. */
  SCHEDULER_LEASE_TTL_MS: z.coerce.number().int().min(500).max(3_600_000).default(45_000),
  /** Snapshots older than this are deleted, with their KPI records (DESIGN: a periodic delete, not a TTL index). */
  RETENTION_DAYS: z.coerce.number().min(1).max(36_500).default(400),
  RETENTION_EVERY_MS: z.coerce.number().int().min(1_000).default(3_600_000),
  /**
   * The key (32 random bytes, base64) that seals projects' credentials for pages behind a login
   * (secret-box.ts); during a rotation the old one goes in PERFWATCH_SECRETS_KEY_PREVIOUS. Unset:
   * no project can have credentials.
   */
  PERFWATCH_SECRETS_KEY: z.string().min(1).optional(),
  PERFWATCH_SECRETS_KEY_PREVIOUS: z.string().min(1).optional(),
  /**
   * Locations whose agents may be sent a project's credentials, comma-separated
   * (`london,frankfurt`): a job carries them opened to whoever runs the location's agents
   * (credential-trust.ts). The agents `perfwatch start` runs in its own process are trusted
   * always. Default: none.
   */
  PERFWATCH_TRUSTED_LOCATIONS: z
    .string()
    .default('')
    .transform((text, ctx): Location[] => {
      const names = text
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '');
      const unknown = names.filter((name) => !(LOCATIONS as readonly string[]).includes(name));
      if (unknown.length > 0)
        ctx.addIssue({
          code: 'custom',
          message: `unknown locations ${unknown.join(', ')}; known: ${LOCATIONS.join(', ')}`,
        });
      return [...new Set(names)] as Location[];
    }),
  /** Where users reach this gateway's dashboard: the links in webhook deliveries. Unset: http://localhost:PORT. */
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  /**
   * Webhook targets must be public addresses, as audited pages must be on agents; CIDRs or
   * addresses listed here (`10.0.0.0/8,192.168.1.5`) are allowed although private.
   */
  PERFWATCH_ALLOW_TARGETS: z.string().default(''),
  /** A failed webhook delivery is tried again after this long, doubling up to WEBHOOK_RETRY_MAX_MS, for WEBHOOK_GIVE_UP_AFTER_MS. */
  WEBHOOK_RETRY_FIRST_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  WEBHOOK_RETRY_MAX_MS: z.coerce.number().int().min(100).max(86_400_000).default(600_000),
  WEBHOOK_GIVE_UP_AFTER_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(86_400_000),
  /** How often the outbox is looked at for due deliveries. */
  WEBHOOK_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(1_000),
  /**
   * The most one webhook POST may take, all of it (resolving, connecting, sending, the whole
   * answer); a delivery's claim lasts twice this, so no other replica takes one still in flight.
   */
  WEBHOOK_DEADLINE_MS: z.coerce.number().int().min(1_000).max(60_000).default(SENDER_DEFAULTS.deadlineMs),
  /** Webhook deliveries one gateway posts at once, all users together, and of one user. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(SENDER_DEFAULTS.concurrency),
  WEBHOOK_IN_FLIGHT_PER_USER: z.coerce.number().int().min(1).max(1_000).default(SENDER_DEFAULTS.perUser),
  /** Webhooks one user may have; adding past it is refused (400). */
  WEBHOOK_MAX_PER_USER: z.coerce.number().int().min(1).max(1_000).default(DEFAULT_MAX_WEBHOOKS_PER_USER),
  /** Delivered and failed webhook deliveries older than this are deleted (every RETENTION_EVERY_MS). */
  WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce.number().min(1).max(3_650).default(30),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /**
   * Tests only: the gateway SIGKILLs itself at this point of storing a snapshot with budget
   * events (`snapshot-saved`: before its outbox write; `alerts-queued`: after it, before the
   * snapshot is recorded announced), to prove that a gateway dying there loses no alert.
   */
  PERFWATCH_TEST_KILL_AT: z.enum(['snapshot-saved', 'alerts-queued']).optional(),
  /**
   * On SIGTERM, /readyz answers 503 at once and the gateway keeps serving this long before it
   * stops accepting, so load balancers (Kubernetes endpoints) stop sending it traffic first.
   */
  SHUTDOWN_READINESS_DELAY_MS: z.coerce.number().int().min(0).max(120_000).default(5_000),
});

export type GatewayConfig = z.infer<typeof gatewayEnvSchema>;

/**
 * A complete configuration from the schema's defaults and a few settings, for programs that
 * run a gateway without reading its environment (`perfwatch start`, tests, benchmarks).
 */
export function gatewayConfigWith(settings: Partial<GatewayConfig>): GatewayConfig {
  return { ...gatewayEnvSchema.parse({}), ...settings };
}

export function loadGatewayConfig(env: Readonly<Record<string, string | undefined>>): GatewayConfig {
  return parseEnv(gatewayEnvSchema, env);
}

import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

/** How the gateway's HTTP API takes requests and answers them. */
export const httpSettings = settingGroup('HTTP API', {
  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/, 'must look like 100kb')
    .default('100kb')
    .describe('The largest JSON request body taken; larger ones get 413.'),
  HEADERS_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(600_000)
    .default(10_000)
    .describe(
      'A client must send its headers within this long, and its whole request within REQUEST_TIMEOUT_MS; else 408.',
    ),
  REQUEST_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(600_000)
    .default(30_000)
    .describe('See HEADERS_TIMEOUT_MS.'),
  ANSWER_STALL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(30_000)
    .describe(
      'A client that reads nothing of a long answer (/v1/overview, /v1/audit, a sync /v1/update) for this long is ' +
        "cut off, and what the answer held released (an overview's database cursor, an audit's place for heavy reads).",
    ),
  TRUST_PROXY: z
    .string()
    .min(1)
    .transform((v): boolean | number | string =>
      /^\d+$/.test(v) ? Number(v) : v === 'true' ? true : v === 'false' ? false : v,
    )
    .optional()
    .describe(
      "Behind a load balancer or ingress: Express's `trust proxy` (a hop count such as 1, or addresses such as " +
        '"loopback, uniquelocal"), so the client address is X-Forwarded-For\'s. Unset: the socket\'s address.',
    ),
  PUBLIC_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      "Where users reach this gateway's dashboard: the links in webhook deliveries, and single sign-on's " +
        'redirect URI (PUBLIC_URL/auth/sso/callback). Unset: http://localhost:PORT.',
    ),
  SHUTDOWN_READINESS_DELAY_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(120_000)
    .default(5_000)
    .describe(
      'On SIGTERM, /readyz answers 503 at once and the gateway keeps serving this long before it stops accepting, ' +
        'so load balancers (Kubernetes endpoints) stop sending it traffic first.',
    ),
});

import { z } from 'zod';
import { settingGroup } from './setting-group.ts';

const port = () => z.coerce.number().int().min(0).max(65535);

/** Where a program listens: its public port, and the operators' port (/metrics, /healthz, /readyz). */
export const listeningSettings = settingGroup('Ports', {
  PORT: port().default(8080).describe('The HTTP port of the API and the dashboard.'),
  HOST: z.string().min(1).default('0.0.0.0').describe('The address PORT listens on.'),
  /** No default here: the agent always has an ops port, the gateway only when this is set. */
  OPS_PORT: port()
    .optional()
    .describe(
      "The operators' port: /metrics, /readyz and /healthz. On the gateway, when set, they are served " +
        'there only, so the public port behind an ingress does not expose them; unset, they are on PORT.',
    ),
  OPS_HOST: z.string().min(1).default('0.0.0.0').describe('The address OPS_PORT listens on.'),
});

/** The old names of the agent's ops settings, before one name served every program. */
export const OPS_ALIASES = { PERFWATCH_OPS_PORT: 'OPS_PORT', PERFWATCH_OPS_HOST: 'OPS_HOST' } as const;

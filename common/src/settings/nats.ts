import { z } from 'zod';
import { settingGroup } from './setting-group.ts';

/**
 * How a program reaches NATS. An agent in someone else's region connects over TLS with
 * credentials of its own: a creds file (NATS decentralized auth, JWT + seed) or an nkey seed
 * file, and optionally a client certificate.
 */
export const natsSettings = settingGroup('NATS', {
  NATS_URL: z
    .string()
    .min(1)
    .optional()
    .describe('NATS servers, comma-separated (`nats://host:4222,tls://host2:4222`).'),
  NATS_CREDS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('A creds file (NATS decentralized auth: JWT and seed) to connect with.'),
  NATS_NKEY_SEED_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('An nkey seed file to connect with (`npm run nats-credentials` writes them).'),
  NATS_TLS_CA_FILE: z
    .string()
    .min(1)
    .optional()
    .describe("The CA that signed the server's certificate, when it is not a public one."),
  NATS_TLS_CERT_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('A client certificate, for servers that verify clients (mutual TLS).'),
  NATS_TLS_KEY_FILE: z.string().min(1).optional().describe("The client certificate's key."),
});

/** The NATS settings of the programs that always connect (gateway, agent). */
export const natsEnvSchema = z.object({
  ...natsSettings.settings,
  NATS_URL: natsSettings.settings.NATS_URL.default('nats://127.0.0.1:4222'),
});
export type NatsSettings = z.infer<typeof natsEnvSchema>;

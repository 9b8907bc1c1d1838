import { readFile } from 'node:fs/promises';
import { credsAuthenticator, nkeyAuthenticator, type NatsConnection } from '@nats-io/nats-core';
import { connect, type NodeConnectionOptions } from '@nats-io/transport-node';
import { StartupError } from './errors.ts';
import type { NatsSettings } from './settings/nats.ts';

/** Connects as `name`, turning a refusal into an error that says what to check. */
export async function connectNats(
  settings: NatsSettings,
  options: { name: string } & Partial<NodeConnectionOptions>,
): Promise<NatsConnection> {
  const servers = settings.NATS_URL.split(',');
  const connectOptions: NodeConnectionOptions = { servers, maxReconnectAttempts: -1, ...options };
  if (settings.NATS_CREDS_FILE)
    connectOptions.authenticator = credsAuthenticator(await readSecret(settings.NATS_CREDS_FILE, 'NATS_CREDS_FILE'));
  else if (settings.NATS_NKEY_SEED_FILE)
    connectOptions.authenticator = nkeyAuthenticator(
      new TextEncoder().encode(
        (await readSecret(settings.NATS_NKEY_SEED_FILE, 'NATS_NKEY_SEED_FILE')).toString('utf8').trim(),
      ),
    );
  if (settings.NATS_TLS_CA_FILE || settings.NATS_TLS_CERT_FILE) {
    connectOptions.tls = {
      ...(settings.NATS_TLS_CA_FILE ? { caFile: settings.NATS_TLS_CA_FILE } : {}),
      ...(settings.NATS_TLS_CERT_FILE ? { certFile: settings.NATS_TLS_CERT_FILE } : {}),
      ...(settings.NATS_TLS_KEY_FILE ? { keyFile: settings.NATS_TLS_KEY_FILE } : {}),
    };
  }
  try {
    return await connect(connectOptions);
  } catch (error) {
    const message = (error as Error).message;
    const refused = /authori[sz]ation|authentication|user/i.test(message);
    const tls = /tls|certificate|self.signed/i.test(message);
    const hint = refused
      ? 'the server refused these credentials: check NATS_CREDS_FILE or NATS_NKEY_SEED_FILE, and that the server knows this user'
      : tls
        ? 'TLS failed: check NATS_TLS_CA_FILE (and the client certificate, if the server asks for one)'
        : 'check NATS_URL and that the server is reachable';
    // Only an unreachable server may answer later; refused credentials and bad TLS never will.
    throw new StartupError(
      `could not connect to NATS at ${natsServersForLog(settings.NATS_URL)}: ${message} (${hint})`,
      { cause: error, retryable: !refused && !tls },
    );
  }
}

/** NATS_URL as it may be logged: a user and password in a server URL become `***`. */
export function natsServersForLog(url: string): string {
  return url
    .split(',')
    .map((server) => server.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1***@'))
    .join(', ');
}

async function readSecret(path: string, variable: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new StartupError(
      `${variable}=${path} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      { cause: error },
    );
  }
}

/**
 * Ends a connection on shutdown: drained (what is in flight delivered) when the server is
 * there, closed outright when draining fails. A connection left open after a failed drain, its
 * server gone, goes on reconnecting for ever (maxReconnectAttempts -1), and its timers keep the
 * process alive long after SIGTERM.
 */
export async function endNats(nc: NatsConnection | undefined): Promise<void> {
  if (!nc || nc.isClosed()) return;
  try {
    await nc.drain();
  } catch {
    await nc.close();
  }
}

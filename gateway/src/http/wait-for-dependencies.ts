import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { ApiError, StartupError } from '@perfwatch/common';

/**
 * Start order: a gateway may come up before NATS or MongoDB (a cold `docker compose up`, a
 * rescheduled pod). It waits for each with a log line per attempt instead of dying with a
 * driver's stack, and meanwhile answers on its port: live (/healthz 200) but not ready
 * (/readyz 503 saying what it waits for), every other path a 503 in the API's error envelope.
 */
export interface StartingServer {
  port: number;
  /** What the gateway is waiting for, shown by /readyz and in the 503s. */
  waitingFor(what: string): void;
  close(): Promise<void>;
}

export async function startStartingServer({ port, host }: { port: number; host: string }): Promise<StartingServer> {
  let waiting = 'starting';
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: unknown) => {
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        ...(status === 503 ? { 'retry-after': '5' } : {}),
      });
      res.end(JSON.stringify(body));
    };
    if (path === '/healthz') send(200, { ok: true });
    else if (path === '/readyz') send(503, { ok: false, reason: waiting });
    else send(503, new ApiError('SERVICE_UNAVAILABLE', `the gateway is starting: ${waiting}`).toEnvelope());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    waitingFor: (what) => void (waiting = what),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface WaitOptions {
  logger: Logger;
  /** Gives up waiting (the gateway is being stopped). */
  signal?: AbortSignal;
  /** First pause between attempts; it doubles up to maxDelayMs. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Calls `attempt` until it succeeds, logging each failure as "waiting for <dependency>". A
 * failure that retrying cannot cure (`isFinal`: refused credentials, a bad certificate) ends
 * the wait at once, with the error that says what to fix.
 */
export async function waitForDependency<T>(
  dependency: string,
  attempt: () => Promise<T>,
  {
    logger,
    signal,
    minDelayMs = 1_000,
    maxDelayMs = 15_000,
    isFinal = () => false,
  }: WaitOptions & { isFinal?: (error: Error) => boolean },
): Promise<T> {
  const started = Date.now();
  const value = await pRetry(attempt, {
    retries: Number.POSITIVE_INFINITY,
    minTimeout: minDelayMs,
    maxTimeout: maxDelayMs,
    ...(signal ? { signal } : {}),
    shouldRetry: ({ error }) => !isFinal(error),
    onFailedAttempt: ({ error, attemptNumber }) => {
      if (isFinal(error)) return;
      logger.warn({ dependency, attempt: attemptNumber, reason: error.message }, `waiting for ${dependency}`);
    },
  });
  if (Date.now() - started > minDelayMs)
    logger.info({ dependency, waitedMs: Date.now() - started }, `${dependency} reached`);
  return value;
}

/** A StartupError that says the settings are wrong, not that the server is not up yet. */
export function isSettingsError(error: Error): boolean {
  return error instanceof StartupError && !error.retryable;
}

/** MongoDB's host list without the user and password a URI may carry. */
export function mongoHosts(uri: string): string {
  const afterScheme = uri.replace(/^mongodb(\+srv)?:\/\//, '');
  const authority = afterScheme.split('/')[0] ?? '';
  return authority.slice(authority.lastIndexOf('@') + 1);
}

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino, type Logger } from 'pino';
import { inject } from 'vitest';
import { startNatsContainer } from './container-api-setup.ts';
import {
  createAdmin,
  gatewayConfigWith,
  MongoStore,
  startGateway,
  type Admin,
  type GatewayConfig,
  type GatewayRuntime,
} from '@perfwatch/gateway';
import { startNatsServer, type LocalServer } from './local-servers.ts';
import type { ArtifactStore } from '../../gateway/src/artifacts/store/artifact-store.ts';

export const silentLogger: Logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

/** A debug-level logger whose lines are pushed to `lines`, for tests that check what was (not) logged. */
export const capturedLogger = (lines: string[]): Logger =>
  pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });

/** A MongoStore on the shared test server, in a database of its own. */
export async function testStore(): Promise<MongoStore> {
  const store = new MongoStore({ uri: inject('mongoUri'), dbName: `pwtest_${randomUUID().slice(0, 8)}` });
  await store.init();
  return store;
}

/**
 * A nats-server of this test file's own. Agents of one location share a subject, so suites
 * that run agents must not share a server with suites running other agents.
 */
export async function isolatedNats({ config }: { config?: string } = {}): Promise<
  LocalServer & { dispose(): Promise<void> }
> {
  // In the containers project, a nats-server container of its own (a config file stays a process).
  const container = inject('natsContainer');
  if (container && config === undefined) return natsContainer(container);
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-nats-'));
  const server = await startNatsServer({
    binary: inject('natsServerBinary'),
    dir,
    ...(config === undefined ? {} : { config }),
  });
  return { ...server, dispose: async () => (await server.stop(), await rm(dir, { recursive: true, force: true })) };
}

async function natsContainer({
  image,
  dockerHost,
}: {
  image: string;
  dockerHost: string | null;
}): Promise<LocalServer & { dispose(): Promise<void> }> {
  if (dockerHost) process.env['DOCKER_HOST'] = dockerHost;
  process.env['TESTCONTAINERS_RYUK_DISABLED'] ??= 'true';
  const started = await startNatsContainer(image);
  return { ...started, pid: 0, dispose: started.stop };
}

export interface TestGateway {
  url: string;
  store: MongoStore;
  nc: NatsConnection;
  admin: Admin;
  runtime: GatewayRuntime;
  stop(): Promise<void>;
}

export async function startTestGateway({
  natsUrl,
  runTimeoutMs = 10_000,
  replyTimeoutMs = 20_000,
  rateLimits,
  cruxEndpoint,
  store: given,
  logger = silentLogger,
  config,
  artifacts,
  now,
}: {
  natsUrl: string;
  runTimeoutMs?: number;
  replyTimeoutMs?: number;
  rateLimits?: { updates: number; reads: number };
  cruxEndpoint?: string;
  store?: MongoStore;
  logger?: Logger;
  config?: Partial<GatewayConfig>;
  /** The artifact store the gateway is handed; absent: the one its settings make (ARTIFACT_DIR, …). */
  artifacts?: ArtifactStore;
  /** The gateway's clock (scheduler passes, artifact expiry); absent: the real one. */
  now?: () => Date;
}): Promise<TestGateway> {
  const store = given ?? (await testStore());
  const nc = await connect({ servers: natsUrl });
  const runtime = await startGateway({
    nc,
    store,
    logger,
    ...(artifacts ? { artifacts } : {}),
    ...(now ? { now } : {}),
    config: gatewayConfigWith({
      PORT: 0,
      HOST: '127.0.0.1',
      RUN_TIMEOUT_MS: runTimeoutMs,
      SYNC_UPDATE_TIMEOUT_MS: replyTimeoutMs,
      RATE_LIMIT_UPDATES_PER_MINUTE: rateLimits?.updates ?? 10_000,
      RATE_LIMIT_READS_PER_MINUTE: rateLimits?.reads ?? 10_000,
      AUTH_FAILURES_PER_MINUTE: 10_000,
      SHUTDOWN_READINESS_DELAY_MS: 0,
      ...(cruxEndpoint ? { CRUX_API_KEY: 'test-key', CRUX_API_ENDPOINT: cruxEndpoint } : {}),
      ...config,
    }),
  });
  return {
    url: runtime.http.url,
    store,
    nc,
    admin: createAdmin(store),
    runtime,
    async stop() {
      await runtime.stop();
      await nc.drain();
      // A store passed in belongs to the caller.
      if (!given) await store.close();
    },
  };
}

/** A nats-server of the test file's own and a client connection to it, disposed together. */
export async function natsWithClient(): Promise<{
  nats: Awaited<ReturnType<typeof isolatedNats>>;
  client: NatsConnection;
  dispose(): Promise<void>;
}> {
  const nats = await isolatedNats();
  const client = await connect({ servers: nats.url });
  return {
    nats,
    client,
    async dispose() {
      await client.drain();
      await nats.dispose();
    },
  };
}

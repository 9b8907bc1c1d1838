import {
  connectNats,
  createLogger,
  createShutdown,
  deprecatedNamesIn,
  endNats,
  natsServersForLog,
  shutdownOnSignals,
  StartupError,
} from '@perfwatch/common';
import type { NatsConnection } from '@nats-io/nats-core';
import { gatewaySettings, loadGatewayConfig } from './config.ts';
import { GATEWAY_NATS_OPTIONS } from './dispatch/nats/nats-offer.ts';
import { startGateway, type GatewayRuntime } from './runtime.ts';
import { MongoStore } from './store/mongo-store.ts';
import { storeFromEnv } from './store/open-store.ts';
import type { Store } from './store/store.ts';
import { isSettingsError, mongoHosts, startStartingServer, waitForDependency } from './http/wait-for-dependencies.ts';

/** `perfwatch gateway`: the only place of the gateway program that reads the environment. */
export async function main(_argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const config = loadGatewayConfig(env);
  const logger = createLogger({ name: 'perfwatch-gateway', level: config.LOG_LEVEL });
  for (const name of deprecatedNamesIn(env, gatewaySettings.aliases)) logger.warn(name, 'deprecated setting name');

  // Until NATS and MongoDB answer, the port says "live, not ready" (see wait-for-dependencies).
  const starting = await startStartingServer({ port: config.PORT, host: config.HOST });
  const aborted = new AbortController();
  let store: Store | undefined;
  let nc: NatsConnection | undefined;
  let gateway: GatewayRuntime | undefined = undefined;

  let shuttingDown = false;
  const shutdown = createShutdown({ logger, deadlineMs: config.SHUTDOWN_TIMEOUT_MS }, [
    { name: 'stop waiting for dependencies', run: () => aborted.abort() },
    { name: 'starting server', run: () => starting.close() },
    { name: 'gateway', run: () => gateway?.stop() },
    { name: 'NATS', run: () => endNats(nc) },
    { name: 'store', run: () => store?.close() },
  ]);
  shutdownOnSignals((reason) => {
    shuttingDown = true;
    return shutdown(reason);
  });

  const wait = { logger, signal: aborted.signal, isFinal: isSettingsError };
  try {
    if (config.PERFWATCH_DATA_DIR) {
      const embedded = storeFromEnv({ PERFWATCH_DATA_DIR: config.PERFWATCH_DATA_DIR, MONGODB_DB: config.MONGODB_DB });
      logger.info({ store: embedded.where }, 'embedded store: run one gateway replica only');
      store = embedded.store;
      await store.init();
    } else {
      const mongo = mongoHosts(config.MONGODB_URI);
      starting.waitingFor(`waiting for MongoDB at ${mongo}`);
      store = await waitForDependency(
        `MongoDB at ${mongo}`,
        () => openStore(config.MONGODB_URI, config.MONGODB_DB, mongo),
        wait,
      );
    }
    const natsServers = natsServersForLog(config.NATS_URL);
    starting.waitingFor(`waiting for NATS at ${natsServers}`);
    nc = await waitForDependency(`NATS at ${natsServers}`, () => connectNats(config, GATEWAY_NATS_OPTIONS), wait);
  } catch (error) {
    if (shuttingDown) return;
    await starting.close();
    await store?.close();
    throw error;
  }
  if (shuttingDown) return void (await nc.close());
  await starting.close();
  gateway = await startGateway({ nc, store, logger, config });
  await nc.closed();
}

/** A connected, indexed store, or a StartupError saying whether waiting can help. */
async function openStore(uri: string, dbName: string, hosts: string): Promise<MongoStore> {
  const store = new MongoStore({ uri, dbName });
  try {
    await store.init();
    return store;
  } catch (error) {
    await store.close().catch(() => undefined);
    const name = (error as Error).name;
    // Selection and network failures are a server not (yet) reachable; anything else — a bad
    // URI, refused credentials — will not cure itself.
    const unreachable = /^Mongo(ServerSelection|Network|NetworkTimeout|TopologyClosed)Error$/.test(name);
    const hint = unreachable
      ? 'check MONGODB_URI and that the server is reachable'
      : 'check MONGODB_URI (host, user and password)';
    throw new StartupError(`could not open the store on MongoDB at ${hosts}: ${(error as Error).message} (${hint})`, {
      cause: error,
      retryable: unreachable,
    });
  }
}

import { connectNats, createLogger } from '@perfwatch/common';
import { loadGatewayConfig } from './config.ts';
import { startGateway } from './gateway-runtime.ts';
import { MongoStore } from './store/mongo-store.ts';

/** `perfwatch gateway`: the only place of the gateway program that reads the environment. */
export async function main(env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const config = loadGatewayConfig(env);
  const logger = createLogger({ name: 'perfwatch-gateway', level: config.LOG_LEVEL });
  const store = new MongoStore({ uri: config.MONGODB_URI, dbName: config.MONGODB_DB });
  await store.init();
  const nc = await connectNats(config, { name: 'perfwatch-gateway' });
  const gateway = await startGateway({ nc, store, logger, config });

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS).unref();
    await gateway.stop();
    await nc.drain();
    await store.close();
    logger.flush();
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  await nc.closed();
}

import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { startAgentRegistry, type AgentRegistry } from './agent-registry.ts';
import { createCruxClient } from './crux/crux-client.ts';
import { createNatsDispatcher } from './nats-dispatcher.ts';
import { createServer, type GatewayServer } from './server.ts';
import type { Store } from './store/store.ts';
import { createUpdateService } from './update-service.ts';
import type { GatewayConfig } from './config.ts';

export interface GatewayRuntime {
  http: GatewayServer;
  agents: AgentRegistry;
  /** Ordered: stop accepting HTTP and finish open requests, then release NATS and the store. */
  stop(): Promise<void>;
}

/** Wires a gateway from connected parts; shared by `perfwatch gateway`, `perfwatch start` and the tests. */
export async function startGateway({ nc, store, logger, config }: { nc: NatsConnection; store: Store; logger: Logger; config: GatewayConfig }): Promise<GatewayRuntime> {
  const agents = await startAgentRegistry({ nc, logger });
  const dispatcher = createNatsDispatcher({ nc, logger, registry: agents });
  const crux = config.CRUX_API_KEY ? createCruxClient({ endpoint: config.CRUX_API_ENDPOINT, apiKey: config.CRUX_API_KEY, logger }) : undefined;
  const updates = createUpdateService({ dispatcher, store, logger, runTimeoutMs: config.RUN_TIMEOUT_MS, replyTimeoutMs: config.SYNC_UPDATE_TIMEOUT_MS, crux });
  const http = await createServer({
    store,
    updates,
    logger,
    bodyLimit: config.BODY_LIMIT,
    rateLimits: { updates: config.RATE_LIMIT_UPDATES_PER_MINUTE, reads: config.RATE_LIMIT_READS_PER_MINUTE },
    port: config.PORT,
    host: config.HOST,
  });
  logger.info({ url: http.url }, 'gateway listening');
  return {
    http,
    agents,
    async stop() {
      await http.close();
      // Async updates accepted before the stop are finished, not dropped.
      await updates.drain();
      await agents.stop();
    },
  };
}

import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Transport } from '../transport.ts';
import { startAgentRegistry } from './agent-registry.ts';
import { startJetStreamUpdateQueue } from './jetstream-update-queue.ts';
import { createNatsDispatcher } from './nats-dispatcher.ts';
import { createArtifactReceiver } from '../../artifacts/artifact-receiver.ts';

/** Agents anywhere, over NATS: their announcements, offers to their queue groups, and the JetStream update queue. */
export async function createNatsTransport({
  nc,
  logger,
  maxInFlight,
  ackWaitMs,
}: {
  nc: NatsConnection;
  logger: Logger;
  /** Runs offered and awaited at once (MAX_RUNS_IN_FLIGHT). */
  maxInFlight: number;
  /** Without a sign of life for this long, a queued update goes to another gateway (UPDATE_ACK_WAIT_MS). */
  ackWaitMs: number;
}): Promise<Transport> {
  const registry = await startAgentRegistry({ nc, logger });
  return {
    name: 'NATS',
    registry,
    dispatcher: createNatsDispatcher({ nc, logger, registry, maxInFlight }),
    nc,
    artifactReceiver: (store) => createArtifactReceiver({ nc, store, logger }),
    startQueue: (options) => startJetStreamUpdateQueue({ ...options, nc, ackWaitMs }),
    open: () => !nc.isClosed() && !nc.isDraining(),
    ping: () => nc.flush(),
    close: () => registry.stop(),
  };
}

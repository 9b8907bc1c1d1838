import type { NatsConnection } from '@nats-io/nats-core';
import type { Location } from '@perfwatch/common';
import type { UpdateQueue } from '../updates/update-queue.ts';
import type { DeliveryOptions } from './delivery-rules.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { Dispatcher } from './run-outcome.ts';
import type { ArtifactReceiver } from '../artifacts/artifact-receiver.ts';
import type { ArtifactStore } from '../artifacts/store/artifact-store.ts';

/**
 * How the gateway reaches agents, one per mode: NATS (agents anywhere, JetStream for the update
 * queue, nats/nats-transport.ts) or agents in this very process (`perfwatch start` without
 * NATS_URL: the queue lives in the process and the store makes it durable,
 * local/local-transport.ts). The wiring chooses one; nothing else asks which it has.
 */
export interface Transport {
  /** Named in readiness reasons. */
  readonly name: string;
  /** The agents there are, for metrics and the dispatcher. */
  readonly registry: AgentRegistry;
  readonly dispatcher: Dispatcher;
  /** The NATS connection, for its metric; none in local mode. */
  readonly nc?: NatsConnection;
  /** Locations whose agents are trusted with credentials whatever the settings say (in-process ones). */
  readonly trustedLocations?: readonly Location[];
  /** How the chosen runs' artifacts come from the agents that made them into `store`. */
  artifactReceiver(store: Pick<ArtifactStore, 'put'>): ArtifactReceiver;
  /** The update queue on this transport, started once the update service it runs exists. */
  startQueue(options: DeliveryOptions): Promise<UpdateQueue>;
  /** Whether it can carry work at all (NATS: the connection is neither closed nor draining). */
  open(): boolean;
  /** A round trip through it; at once where there is nothing to cross. */
  ping(): Promise<void>;
  /** Lets go of what it holds (the registry's subscription); a connection is its owner's to drain. */
  close(): Promise<void>;
}

import type { Logger } from 'pino';
import { PERFWATCH_VERSION } from '@perfwatch/common';
import type { InProcessAgent } from '@perfwatch/common';
import type { AgentRegistry } from '../agent-registry.ts';
import type { Transport } from '../transport.ts';
import { createLocalDispatcher } from './local-dispatcher.ts';
import { startLocalUpdateQueue } from './local-update-queue.ts';
import { createLocalArtifactReceiver } from '../../artifacts/local-artifact-receiver.ts';

/**
 * Agents in the gateway's own process (`perfwatch start` without NATS): runs are handed to them
 * directly (local-dispatcher.ts), updates queue in the process (local-update-queue.ts), and
 * their locations are trusted with credentials, since nothing leaves the process.
 */
export function createLocalTransport({
  agents,
  logger,
}: {
  agents: readonly InProcessAgent[];
  logger: Logger;
}): Transport {
  const registry = createLocalRegistry(agents);
  return {
    name: 'the local bus',
    registry,
    dispatcher: createLocalDispatcher({ agents, logger }),
    trustedLocations: agents.map((agent) => agent.location),
    artifactReceiver: (store) => createLocalArtifactReceiver({ agents, store, logger }),
    startQueue: (options) => startLocalUpdateQueue(options),
    open: () => true,
    ping: async () => undefined,
    close: () => registry.stop(),
  };
}

/** The registry of in-process agents: they are there as long as the process is. */
function createLocalRegistry(agents: readonly InProcessAgent[]): AgentRegistry {
  const all = () =>
    agents.map((agent) => ({
      agentId: agent.agentId,
      location: agent.location,
      version: PERFWATCH_VERSION,
      capacity: agent.capacity,
      busy: agent.busy,
      state: 'ready' as const,
      intervalMs: 600_000,
    }));
  return {
    agents: (location) => all().filter((a) => a.location === location),
    all,
    silent: () => false,
    // A direct call cannot be lost on its way.
    confirmsTakes: () => false,
    taken: async () => true,
    roomIn: (_location, ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    // The local dispatcher wakes its waiting runs itself, as each run gives its place back.
    onRoom: () => undefined,
    async stop() {},
  };
}

import type { Logger } from 'pino';
import { decodeJob, decodeReply, encodeJob, encodeReply, PERFWATCH_VERSION, type Location } from '@perfwatch/common';
import type { LocalAgent } from '@perfwatch/agent';
import type { AgentRegistry } from '../nats/agent-registry.ts';
import { replyOutcome, type Dispatcher, type RunOutcome } from '../run-outcome.ts';

/**
 * The in-process bus of `perfwatch start` without NATS: runs go straight to agents in this
 * process. Jobs and replies still pass through the v1 encoders and their zod schemas, so the
 * gateway sees exactly what it would over NATS; a location with no local agent answers like
 * one without responders (503 for an update that has nothing else).
 */
export function createLocalDispatcher({
  agents,
  logger,
}: {
  agents: readonly LocalAgent[];
  logger: Logger;
}): Dispatcher {
  const byLocation = new Map(agents.map((agent) => [agent.location, agent]));
  return {
    async dispatch(job, { timeoutMs, requestId }): Promise<RunOutcome> {
      const agent = byLocation.get(job.location);
      if (!agent) return { ok: false, error: { code: 'NO_RESPONDERS', message: `no agent serves ${job.location}` } };
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)));
      try {
        const reply = await Promise.race([agent.run(decodeJob(encodeJob(job)), requestId).then(encodeReply), timedOut]);
        if (reply === null)
          return {
            ok: false,
            error: { code: 'TIMEOUT', message: `no reply from ${job.location} within ${timeoutMs} ms` },
          };
        return replyOutcome(await decodeReply(reply, 'gzip'));
      } catch (error) {
        logger.error({ err: error, jobId: job.jobId, requestId }, 'local dispatch failed');
        return { ok: false, error: { code: 'INTERNAL', message: `dispatch failed: ${(error as Error).message}` } };
      } finally {
        clearTimeout(timer);
      }
    },
    waiting: (location: Location) => byLocation.get(location)?.waiting ?? 0,
  };
}

/** The registry of in-process agents: they are there as long as the process is. */
export function createLocalRegistry(agents: readonly LocalAgent[]): AgentRegistry {
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
    // In-process agents take runs through the local dispatcher, which queues them itself.
    onRoom: () => undefined,
    async stop() {},
  };
}

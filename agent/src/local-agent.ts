import pLimit from 'p-limit';
import type { AuditReply, InProcessAgent } from '@perfwatch/common';
import { agentDefaults } from './config.ts';
import { createJobExecutor, type JobExecutorDeps } from './job-executor.ts';
import { createArtifactCache } from './artifact-cache.ts';

/** The in-process agent the gateway takes, and what its program needs to stop it. */
export interface LocalAgent extends InProcessAgent {
  /** Takes no more jobs (they get AGENT_SHUTTING_DOWN) and waits for the ones it has. */
  stop(): Promise<void>;
}

/**
 * An agent in the gateway's own process, for `perfwatch start` without NATS: the same job
 * executor as a NATS agent, called directly. Runs beyond its capacity wait here in order.
 */
export function createLocalAgent({
  capacity = agentDefaults.PERFWATCH_CAPACITY,
  ...deps
}: JobExecutorDeps & { capacity?: number }): LocalAgent {
  // Kept as a NATS agent keeps them, for the gateway to take the median run's (gateway/src/artifacts/).
  const artifacts = deps.artifacts ?? createArtifactCache();
  const execute = createJobExecutor({ ...deps, artifacts });
  const runners = pLimit(capacity);
  const running = new Set<Promise<AuditReply>>();
  let stopping = false;
  return {
    location: deps.location,
    agentId: deps.agentId,
    capacity,
    get busy() {
      return runners.activeCount;
    },
    get waiting() {
      return runners.pendingCount;
    },
    run(job, requestId) {
      if (stopping)
        return Promise.resolve({
          ok: false,
          jobId: job.jobId,
          agentId: deps.agentId,
          error: { code: 'AGENT_SHUTTING_DOWN', message: 'agent is shutting down', retryable: true },
        });
      const reply = runners(() => execute(job, requestId));
      running.add(reply);
      void reply.finally(() => running.delete(reply));
      return reply;
    },
    takeArtifact: (jobId, kind) => artifacts.take(jobId, kind),
    async stop() {
      stopping = true;
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}

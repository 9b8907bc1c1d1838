import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  connectNats,
  createLogger,
  createShutdown,
  deprecatedNamesIn,
  endNats,
  shutdownOnSignals,
  startOpsServer,
  type Readiness,
} from '@perfwatch/common';
import { startAgent, type Agent } from './agent.ts';
import { createAgentMetrics } from './metrics.ts';
import { agentSettings, loadAgentConfig } from './config.ts';
import { reapOrphanedChromes } from './orphan-chrome.ts';
import { exitOnUnhandledRejection } from './browser-teardown-errors.ts';
import { createRunnerPool } from './runner-pool.ts';
import { probeSecurity } from './security-probe.ts';
import { createTargetGuard, parseAllowList } from '@perfwatch/common';

/** `perfwatch agent`: the only place of the agent program that reads the environment. */
export async function main(_argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const config = loadAgentConfig(env, process.getuid?.() === 0);
  const logger = createLogger({ name: 'perfwatch-agent', level: config.LOG_LEVEL });
  for (const name of deprecatedNamesIn(env, agentSettings.aliases)) logger.warn(name, 'deprecated setting name');
  await reapOrphanedChromes(logger);
  exitOnUnhandledRejection(logger);
  const nc = await connectNats(config, { name: `perfwatch-agent-${config.agentId}` });
  const runner = runnerFor(config, logger);
  const guard = createTargetGuard({ allow: parseAllowList(config.PERFWATCH_ALLOW_TARGETS) });
  let agent: Agent | null = null;
  const metrics = createAgentMetrics({ nc, location: config.PERFWATCH_LOCATION, agent: () => agent });
  const ops = await startOpsServer({
    port: config.OPS_PORT,
    host: config.OPS_HOST,
    registry: metrics.registry,
    ready: () => readiness(agent, nc),
  });
  logger.info({ url: ops.url }, 'ops server listening (/metrics, /healthz, /readyz)');
  agent = startAgent({
    nc,
    location: config.PERFWATCH_LOCATION,
    runner,
    logger,
    agentId: config.agentId,
    capacity: config.PERFWATCH_CAPACITY,
    announceIntervalMs: config.PERFWATCH_ANNOUNCE_INTERVAL_MS,
    keepScreenshots: config.PERFWATCH_KEEP_SCREENSHOTS,
    keepArtifacts: config.PERFWATCH_KEEP_ARTIFACTS,
    probeSecurity: (url) => probeSecurity(url, { guard }),
    observer: metrics,
    calibrateEveryRuns: config.PERFWATCH_CALIBRATE_EVERY_RUNS,
  });
  const serving = agent;

  // Say goodbye, stop taking work and finish the current runs, drain NATS, kill our Chromes. Past
  // the deadline our Chromes are killed all the same.
  const shutdown = createShutdown(
    {
      logger,
      deadlineMs: config.SHUTDOWN_TIMEOUT_MS,
      // Chromes killed first, but never waited on for more than 5 s: the deadline is the deadline.
      onDeadline: () =>
        void Promise.race([runner.close(), new Promise((resolve) => setTimeout(resolve, 5_000))]).finally(() =>
          process.exit(1),
        ),
    },
    [
      { name: 'agent', run: () => serving.stop() },
      { name: 'NATS', run: () => endNats(nc) },
      { name: 'Chromes', run: () => runner.close() },
      { name: 'ops server', run: () => ops.close() },
    ],
  );
  shutdownOnSignals(shutdown);
  await nc.closed();
}

/**
 * Lighthouse in worker threads even at capacity 1: its trace processing holds a thread for
 * seconds on a loaded machine, and this one must keep answering NATS and announcing.
 */
function runnerFor(config: ReturnType<typeof loadAgentConfig>, logger: Logger) {
  return createRunnerPool({
    size: config.PERFWATCH_CAPACITY,
    worker: {
      chromePath: config.CHROME_PATH,
      noSandbox: config.noSandbox,
      runsPerBrowser: config.PERFWATCH_RUNS_PER_BROWSER,
      allowTargets: config.PERFWATCH_ALLOW_TARGETS,
      cpu: { multiplier: config.PERFWATCH_CPU_MULTIPLIER },
      logLevel: config.LOG_LEVEL,
    },
    logger,
  });
}

/** Ready once serving, until it stops taking work or loses NATS. */
function readiness(agent: Agent | null, nc: NatsConnection): Readiness {
  if (!agent) return { ok: false, reason: 'starting' };
  if (!agent.accepting) return { ok: false, reason: 'shutting down' };
  if (nc.isClosed() || nc.isDraining()) return { ok: false, reason: 'NATS connection closed' };
  return { ok: true };
}

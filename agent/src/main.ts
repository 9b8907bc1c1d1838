import { connect } from '@nats-io/transport-node';
import { createLogger } from '@perfwatch/common';
import { startAgent } from './agent.ts';
import { chromeFlags } from './chrome-flags.ts';
import { loadAgentConfig } from './config.ts';
import { startGuardProxy } from './guard-proxy.ts';
import { reapOrphanedChromes } from './orphan-chrome.ts';
import { exitOnUnhandledRejection } from './browser-teardown-errors.ts';
import { probeSecurity } from './security-probe.ts';
import { createLighthouseRunner } from './lighthouse-runner.ts';
import { createTargetGuard, parseAllowList } from './target-guard.ts';

/** `perfwatch agent`: the only place of the agent program that reads the environment. */
export async function main(env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const config = loadAgentConfig(env, process.getuid?.() === 0);
  const logger = createLogger({ name: 'perfwatch-agent', level: config.LOG_LEVEL });
  await reapOrphanedChromes(logger);
  exitOnUnhandledRejection(logger);
  const nc = await connect({ servers: config.NATS_URL.split(','), name: `perfwatch-agent-${config.agentId}`, maxReconnectAttempts: -1 });
  const guard = createTargetGuard({ allow: parseAllowList(config.PERFWATCH_ALLOW_TARGETS) });
  const proxy = await startGuardProxy({ guard, logger });
  const runner = createLighthouseRunner({ chromePath: config.CHROME_PATH, chromeFlags: chromeFlags({ noSandbox: config.noSandbox }), logger, runsPerBrowser: config.PERFWATCH_RUNS_PER_BROWSER, guard: { guard, proxy } });
  const agent = startAgent({ nc, location: config.PERFWATCH_LOCATION, runner, logger, agentId: config.agentId, keepScreenshots: config.PERFWATCH_KEEP_SCREENSHOTS, probeSecurity: (url) => probeSecurity(url, { guard }) });

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    const deadline = setTimeout(() => {
      logger.error('shutdown deadline passed; exiting');
      void runner.close().finally(() => process.exit(1));
    }, config.SHUTDOWN_TIMEOUT_MS);
    deadline.unref();
    // Order: stop taking work and finish the current run, drain NATS, kill our Chrome, flush.
    await agent.stop();
    await nc.drain();
    await runner.close();
    await proxy.close();
    clearTimeout(deadline);
    logger.flush();
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  await nc.closed();
}

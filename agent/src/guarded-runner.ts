import type { Logger } from 'pino';
import { chromeFlags } from './chrome-flags.ts';
import { startGuardProxy, type GuardProxy } from './guard-proxy.ts';
import { createLighthouseRunner, type PageRunner, type CpuCalibration } from './lighthouse-runner.ts';
import { createTargetGuard, parseAllowList, type TargetGuard } from '@perfwatch/common';

export interface GuardedRunnerOptions {
  chromePath: string;
  noSandbox: boolean;
  runsPerBrowser: number;
  /** PERFWATCH_ALLOW_TARGETS: CIDRs or addresses the runs may reach although not public. */
  allowTargets: string;
  /** Mobile runs' CPU slowdown; absent: `auto`, from the agent's benchmark index. */
  cpu?: CpuCalibration;
}

/**
 * One Lighthouse runner behind its own target guard and guard proxy. The proxy belongs to
 * the runner because it reports which hosts it refused during the run; runners working at
 * the same time must not see each other's refusals.
 */
export async function startGuardedRunner(
  options: GuardedRunnerOptions,
  logger: Logger,
): Promise<{ runner: PageRunner; guard: TargetGuard; proxy: GuardProxy }> {
  const guard = createTargetGuard({ allow: parseAllowList(options.allowTargets) });
  const proxy = await startGuardProxy({ guard, logger });
  const lighthouse = createLighthouseRunner({
    chromePath: options.chromePath,
    chromeFlags: chromeFlags({ noSandbox: options.noSandbox }),
    logger,
    runsPerBrowser: options.runsPerBrowser,
    guard: { guard, proxy },
    ...(options.cpu ? { cpu: options.cpu } : {}),
  });
  return {
    guard,
    proxy,
    runner: {
      run: (request) => lighthouse.run(request),
      calibrate: () => lighthouse.calibrate(),
      async close() {
        await lighthouse.close();
        await proxy.close();
      },
    },
  };
}

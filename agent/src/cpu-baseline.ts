import type { Logger } from 'pino';
import { BENCHMARK_DRIFT_LIMIT } from '@perfwatch/common';

export interface CpuBaseline {
  /**
   * Before a run: waits for a measurement under way, and makes one when it is due (none yet, or
   * `everyRuns` runs since the last) and nothing runs on the agent. The baseline to run with.
   */
  beforeRun(agentIdle: () => boolean): Promise<number | null>;
  /**
   * A run ended (whatever its outcome): one more towards the next measurement. A run made alone
   * that found the machine more than BENCHMARK_DRIFT_LIMIT faster than the baseline says the
   * baseline was measured while something else loaded the host: it is measured again next.
   */
  runDone(run?: { benchmarkIndex: number | null; alone: boolean }): void;
  readonly value: number | null;
}

/**
 * The agent's benchmark index, the one baseline every run of the agent is compared with. It is
 * measured only while the agent runs nothing, and runs wait for a measurement under way: an
 * index measured beside a Lighthouse run (two runner threads calibrating at once, say) reads the
 * machine as slower than it is, and would make every later run look fast and suspect.
 */
export function createCpuBaseline({
  everyRuns,
  measure,
  logger,
}: {
  everyRuns: number;
  measure: () => Promise<number>;
  logger: Logger;
}): CpuBaseline {
  let value: number | null = null;
  let runsSince = 0;
  let measuring: Promise<void> | null = null;

  return {
    async beforeRun(agentIdle) {
      while (measuring) await measuring;
      if ((value === null || runsSince >= everyRuns) && agentIdle()) {
        measuring = measure()
          .then(
            (index) => {
              value = Math.round(index);
              runsSince = 0;
              logger.info({ benchmarkIndex: value }, 'CPU calibrated');
            },
            (error: unknown) =>
              logger.warn(
                { err: { message: (error as Error).message } },
                value === null
                  ? 'could not measure the benchmark index; runs go without a baseline until a measurement succeeds'
                  : 'could not measure the benchmark index; keeping the last one',
              ),
          )
          .finally(() => {
            measuring = null;
          });
        await measuring;
      }
      return value;
    },
    runDone(run) {
      runsSince++;
      if (
        value !== null &&
        run?.alone &&
        run.benchmarkIndex !== null &&
        run.benchmarkIndex > value * (1 + BENCHMARK_DRIFT_LIMIT)
      ) {
        logger.info(
          { benchmarkIndex: run.benchmarkIndex, baseline: value },
          'a run alone found the machine faster than its baseline; measuring again before the next run',
        );
        runsSince = everyRuns;
      }
    },
    get value() {
      return value;
    },
  };
}

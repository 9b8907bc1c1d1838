import type { Logger } from 'pino';
import { driftBeyondLimit, indexCentreAndSpread } from '@perfwatch/common';

/** The agent's baseline: the centre of its readings of the index, and their robust relative spread. */
export interface Baseline {
  index: number;
  spread: number;
}

export interface CpuBaseline {
  /**
   * Before a run: waits for a measurement under way, and makes one when it is due (none yet, or
   * `everyRuns` runs since the last) and nothing runs on the agent. The baseline to run with.
   */
  beforeRun(agentIdle: () => boolean): Promise<Baseline | null>;
  /**
   * A run ended (whatever its outcome): one more towards the next measurement. A run made alone
   * whose index lies within the drift limit is one more reading of the baseline. One that found
   * the machine faster than the limit says the readings were taken while something else loaded
   * the host: they are measured again, afresh, before the next run.
   */
  runDone(run?: { benchmarkIndex: number | null; alone: boolean }): void;
  readonly value: Baseline | null;
}

/** Readings kept: five calibrations' worth, or fewer calibrations and the lone runs between them. */
const WINDOW = 25;

/** The rolling window of readings and the baseline they give (their centre and spread). */
function createReadingWindow(): { add(more: readonly number[]): void; clear(): void; readonly value: Baseline | null } {
  let readings: number[] = [];
  let value: Baseline | null = null;
  return {
    add(more) {
      readings = [...readings, ...more].slice(-WINDOW);
      const stats = indexCentreAndSpread(readings);
      value = stats && { index: Math.round(stats.centre), spread: Math.round(stats.spread * 1000) / 1000 };
    },
    // The baseline stays in use until the next readings replace it.
    clear() {
      readings = [];
    },
    get value() {
      return value;
    },
  };
}

function logCalibrationFailure(logger: Logger, error: unknown, hadBaseline: boolean): void {
  logger.warn(
    { err: { message: (error as Error).message } },
    hadBaseline
      ? 'could not measure the benchmark index; keeping the last one'
      : 'could not measure the benchmark index; runs go without a baseline until a measurement succeeds',
  );
}

/**
 * The agent's benchmark index, the one baseline every run of the agent is compared with: the
 * median of a rolling window of readings taken as Lighthouse takes a run's own (cpu-benchmark.ts),
 * both at idle calibrations and by the runs made alone, with their spread (median absolute
 * deviation), so the gateway allows each machine the drift it shows with nothing wrong.
 * Calibrations are made only while the agent runs nothing, and runs wait for one under way: an
 * index measured beside a Lighthouse run reads the machine as slower than it is.
 */
export function createCpuBaseline({
  everyRuns,
  measure,
  logger,
}: {
  everyRuns: number;
  measure: () => Promise<number[]>;
  logger: Logger;
}): CpuBaseline {
  const readings = createReadingWindow();
  let runsSince = 0;
  let stale = false;
  let measuring: Promise<void> | null = null;

  const calibrate = () =>
    measure()
      .then(
        (samples) => {
          if (samples.length === 0) throw new Error('the calibration took no reading');
          if (stale) readings.clear();
          stale = false;
          readings.add(samples);
          runsSince = 0;
          logger.info(
            { benchmarkIndex: readings.value!.index, spread: readings.value!.spread, samples },
            'CPU calibrated',
          );
        },
        (error: unknown) => logCalibrationFailure(logger, error, readings.value !== null),
      )
      .finally(() => {
        measuring = null;
      });

  return {
    async beforeRun(agentIdle) {
      while (measuring) await measuring;
      if ((readings.value === null || runsSince >= everyRuns) && agentIdle()) {
        measuring = calibrate();
        await measuring;
      }
      return readings.value;
    },
    runDone(run) {
      runsSince++;
      const value = readings.value;
      if (value === null || !run?.alone || run.benchmarkIndex === null) return;
      const drift = driftBeyondLimit(run.benchmarkIndex, value.index, value.spread);
      if (drift > 0) {
        logger.info(
          { benchmarkIndex: run.benchmarkIndex, baseline: value.index },
          'a run alone found the machine faster than its baseline; measuring again before the next run',
        );
        stale = true;
        runsSince = everyRuns;
      } else if (drift === 0) readings.add([run.benchmarkIndex]);
    },
    get value() {
      return readings.value;
    },
  };
}

import { loadavg } from 'node:os';
import type { Logger } from 'pino';
import {
  trimLighthouseResult,
  type AuditJob,
  type AuditReply,
  type LighthouseResult,
  type Location,
  type RunConditions,
  type SecurityFacts,
} from '@perfwatch/common';
import type { ArtifactCache } from './artifact-cache.ts';
import { createCpuBaseline, type Baseline } from './cpu-baseline.ts';
import type { PageRunner, RunOutput } from './lighthouse-runner.ts';
import type { RunObserver } from './metrics.ts';
import { RunFailure } from './run-failure.ts';
import { agentDefaults } from './config.ts';
import { compactScreenshots } from './screenshot-compactor.ts';

export interface JobExecutorDeps {
  location: Location;
  runner: PageRunner;
  logger: Logger;
  agentId: string;
  keepScreenshots?: boolean;
  /** Looks at the final URL's transport and headers after a run; absent: no SECURITY facts. */
  probeSecurity?: (url: string) => Promise<SecurityFacts>;
  /** Told of every run and how it ended (metrics). */
  observer?: RunObserver;
  /** Runs between two measurements of the benchmark index (PERFWATCH_CALIBRATE_EVERY_RUNS). */
  calibrateEveryRuns?: number;
  /** Keeps each run's requests and trace until the gateway pulls its cell's median run (artifact-sender.ts). */
  artifacts?: ArtifactCache;
}

export type JobExecutor = (job: AuditJob, requestId: string | undefined) => Promise<AuditReply>;

/**
 * What an agent does with one job, whatever brought it: run Lighthouse, look at the page's
 * security, and turn the outcome into the v1 reply. Never throws: a failure is a reply too.
 * The NATS agent and the in-process agent of `perfwatch start` share it.
 */
export function createJobExecutor({
  location,
  runner,
  logger,
  agentId,
  keepScreenshots = agentDefaults.PERFWATCH_KEEP_SCREENSHOTS,
  probeSecurity,
  observer,
  calibrateEveryRuns = agentDefaults.PERFWATCH_CALIBRATE_EVERY_RUNS,
  artifacts,
}: JobExecutorDeps): JobExecutor {
  const runs = createRunsInProgress();
  const baseline = runner.calibrate
    ? createCpuBaseline({ everyRuns: calibrateEveryRuns, measure: () => runner.calibrate!(), logger })
    : null;
  return async (job, requestId) => {
    if (job.location !== location)
      return failureReply(
        job,
        agentId,
        new RunFailure('BAD_JOB', `job for ${job.location} sent to ${location}`, false),
      );
    const jobLog = logger.child({ requestId, jobId: job.jobId, device: job.device, runIndex: job.runIndex });
    const calibration = baseline ? await baseline.beforeRun(runs.idle) : undefined;
    const baselineBenchmarkIndex = calibration === undefined ? undefined : (calibration?.index ?? null);
    const startedAt = new Date();
    const loadAverage = Math.round(loadavg()[0]! * 100) / 100;
    const thisRun = runs.start();
    let benchmarkIndex: number | null = null;
    try {
      const output = await observedRun(runner, job, observer, baselineBenchmarkIndex);
      const { lhr, lighthouseMs, conditions, steps } = output;
      if (output.artifacts) artifacts?.keep(job.jobId, output.artifacts);
      benchmarkIndex = conditions?.benchmarkIndex ?? null;
      jobLog.info({ lighthouseMs: Math.round(lighthouseMs), target: { url: job.url } }, 'run done');
      const kept = await keptResult(lhr, keepScreenshots);
      const security = probeSecurity ? await securityOf(probeSecurity, lhr.finalDisplayedUrl, jobLog) : undefined;
      return {
        ok: true,
        result: {
          ...jobFields(job, agentId),
          startedAt: startedAt.toISOString(),
          lighthouseMs,
          lhr: kept,
          ...(steps ? { steps: await keptSteps(steps, kept, keepScreenshots) } : {}),
          ...(security ? { security } : {}),
          ...(conditions ? { conditions: sentConditions(conditions, calibration, thisRun, loadAverage) } : {}),
        },
      };
    } catch (error) {
      return failureReply(job, agentId, error, jobLog);
    } finally {
      thisRun.end();
      baseline?.runDone({ benchmarkIndex, alone: thisRun.overlapping === 0 });
    }
  };
}

/** A flow's steps as sent: each result kept as the run's is; the first step's is the run's own, kept once. */
function keptSteps(
  steps: NonNullable<RunOutput['steps']>,
  kept: LighthouseResult,
  keepScreenshots: boolean,
): Promise<NonNullable<RunOutput['steps']>> {
  return Promise.all(
    steps.map(async (step, i) => ({ ...step, lhr: i === 0 ? kept : await keptResult(step.lhr, keepScreenshots) })),
  );
}

/** One run in progress: how many ran when it started, and how many it met in all so far. */
interface RunInProgress {
  readonly concurrentRuns: number;
  readonly overlapping: number;
  end(): void;
}

/**
 * Runs in progress on this agent, each counting the others it met: another run beside one,
 * when it started or at any time after, makes its numbers doubtful.
 */
function createRunsInProgress(): { idle: () => boolean; start(): RunInProgress } {
  const inProgress = new Set<{ overlapping: number }>();
  return {
    idle: () => inProgress.size === 0,
    start() {
      const concurrentRuns = inProgress.size;
      const run = { overlapping: concurrentRuns };
      for (const other of inProgress) other.overlapping++;
      inProgress.add(run);
      return {
        concurrentRuns,
        get overlapping() {
          return run.overlapping;
        },
        end: () => inProgress.delete(run),
      };
    },
  };
}

/** The run's conditions as sent: the runner's, with the baseline's spread and how busy the agent and its host were. */
function sentConditions(
  conditions: NonNullable<RunOutput['conditions']>,
  calibration: Baseline | null | undefined,
  run: RunInProgress,
  loadAverage: number,
): RunConditions {
  return {
    ...conditions,
    ...(calibration ? { benchmarkSpread: calibration.spread } : {}),
    concurrentRuns: run.concurrentRuns,
    overlappingRuns: run.overlapping,
    loadAverage,
  };
}

/** The job's Lighthouse run, told to the observer however it ends. */
async function observedRun(
  runner: PageRunner,
  job: AuditJob,
  observer: RunObserver | undefined,
  baselineBenchmarkIndex: number | null | undefined,
): ReturnType<PageRunner['run']> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  try {
    const output = await runner.run({
      url: job.url,
      device: job.device,
      timeoutMs: job.timeoutMs,
      ...(job.auth ? { auth: job.auth } : {}),
      ...(job.flow ? { flow: job.flow } : {}),
      ...(baselineBenchmarkIndex !== undefined ? { baselineBenchmarkIndex } : {}),
    });
    observer?.runDone(job.device, 'ok', seconds());
    return output;
  } catch (error) {
    observer?.runDone(job.device, error instanceof RunFailure ? error.code : 'INTERNAL', seconds());
    throw error;
  }
}

/** The page's security facts, or none when the probe fails (the run stands without them). */
function securityOf(
  probe: (url: string) => Promise<SecurityFacts>,
  url: string,
  log: Logger,
): Promise<SecurityFacts | undefined> {
  return probe(url).catch((error: unknown) => {
    log.warn(
      { err: { message: (error as Error).message }, target: { url } },
      'security probe failed; no SECURITY facts for this run',
    );
    return undefined;
  });
}

/** The result as sent: screenshots as Lighthouse took them only when asked; otherwise small ones (screenshot-compactor.ts). */
async function keptResult(lhr: LighthouseResult, keepScreenshots: boolean): Promise<LighthouseResult> {
  return keepScreenshots
    ? trimLighthouseResult(lhr, { keepScreenshots })
    : compactScreenshots(trimLighthouseResult(lhr, { keepScreenshots: true }));
}

/** A run that failed, as the v1 reply; anything but a RunFailure is INTERNAL (retryable). */
function failureReply(job: AuditJob, agentId: string, error: unknown, log?: Logger): AuditReply {
  const failure =
    error instanceof RunFailure ? error : new RunFailure('INTERNAL', (error as Error).message, true, { cause: error });
  log?.warn({ code: failure.code, err: error, target: { url: job.url } }, 'run failed');
  return { ok: false, jobId: job.jobId, agentId, error: failure.toFailure() };
}

/** What binds a run to its job (replyMismatch at the gateway reads these back). */
function jobFields({ jobId, location, device, runIndex }: AuditJob, agentId: string) {
  return { jobId, agentId, location, device, runIndex };
}

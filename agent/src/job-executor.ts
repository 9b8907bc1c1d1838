import { loadavg } from 'node:os';
import type { Logger } from 'pino';
import {
  trimLighthouseResult,
  type AuditJob,
  type AuditReply,
  type Location,
  type SecurityFacts,
} from '@perfwatch/common';
import { createCpuBaseline } from './cpu-baseline.ts';
import type { AuditRunner } from './lighthouse-runner.ts';
import type { RunObserver } from './metrics.ts';
import { RunFailure } from './run-failure.ts';
import { compactScreenshots } from './screenshot-compactor.ts';

export interface JobExecutorDeps {
  location: Location;
  runner: AuditRunner;
  logger: Logger;
  agentId: string;
  keepScreenshots?: boolean;
  /** Looks at the final URL's transport and headers after a run; absent: no SECURITY facts. */
  probeSecurity?: (url: string) => Promise<SecurityFacts>;
  /** Told of every run and how it ended (metrics). */
  observer?: RunObserver;
  /** Runs between two measurements of the benchmark index (PERFWATCH_CALIBRATE_EVERY_RUNS). */
  calibrateEveryRuns?: number;
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
  keepScreenshots = false,
  probeSecurity,
  observer,
  calibrateEveryRuns = 50,
}: JobExecutorDeps): JobExecutor {
  // Runs in progress on this agent, each counting the others it met: another run beside one,
  // when it started or at any time after, makes its numbers doubtful.
  const inProgress = new Set<{ overlapping: number }>();
  const baseline = runner.calibrate
    ? createCpuBaseline({ everyRuns: calibrateEveryRuns, measure: () => runner.calibrate!(), logger })
    : null;
  return async (job, requestId) => {
    if (job.location !== location) {
      return {
        ok: false,
        jobId: job.jobId,
        agentId,
        error: { code: 'BAD_JOB', message: `job for ${job.location} sent to ${location}`, retryable: false },
      };
    }
    const jobLog = logger.child({ requestId, jobId: job.jobId, device: job.device, runIndex: job.runIndex });
    const baselineBenchmarkIndex = baseline ? await baseline.beforeRun(() => inProgress.size === 0) : undefined;
    const startedAt = new Date();
    const started = performance.now();
    const loadAverage = Math.round(loadavg()[0]! * 100) / 100;
    const concurrentRuns = inProgress.size;
    const thisRun = { overlapping: concurrentRuns };
    for (const other of inProgress) other.overlapping++;
    inProgress.add(thisRun);
    let benchmarkIndex: number | null = null;
    try {
      const { lhr, lighthouseMs, conditions } = await runner
        .run({
          url: job.url,
          device: job.device,
          timeoutMs: job.timeoutMs,
          ...(job.auth ? { auth: job.auth } : {}),
          ...(baselineBenchmarkIndex !== undefined ? { baselineBenchmarkIndex } : {}),
        })
        .then(
          (output) => (observer?.runDone(job.device, 'ok', (performance.now() - started) / 1000), output),
          (error: unknown) => {
            observer?.runDone(
              job.device,
              error instanceof RunFailure ? error.code : 'INTERNAL',
              (performance.now() - started) / 1000,
            );
            throw error;
          },
        );
      benchmarkIndex = conditions?.benchmarkIndex ?? null;
      jobLog.info({ lighthouseMs: Math.round(lighthouseMs), target: { url: job.url } }, 'run done');
      const security = probeSecurity
        ? await probeSecurity(lhr.finalDisplayedUrl).catch((error: unknown) => {
            jobLog.warn(
              { err: { message: (error as Error).message }, target: { url: lhr.finalDisplayedUrl } },
              'security probe failed; no SECURITY facts for this run',
            );
            return undefined;
          })
        : undefined;
      return {
        ok: true,
        result: {
          jobId: job.jobId,
          agentId,
          location,
          device: job.device,
          runIndex: job.runIndex,
          startedAt: startedAt.toISOString(),
          lighthouseMs,
          // Screenshots as Lighthouse took them only when asked; otherwise small ones (screenshot-compactor.ts).
          lhr: keepScreenshots
            ? trimLighthouseResult(lhr, { keepScreenshots })
            : await compactScreenshots(trimLighthouseResult(lhr, { keepScreenshots: true })),
          ...(security ? { security } : {}),
          ...(conditions
            ? { conditions: { ...conditions, concurrentRuns, overlappingRuns: thisRun.overlapping, loadAverage } }
            : {}),
        },
      };
    } catch (error) {
      const failure =
        error instanceof RunFailure
          ? error
          : new RunFailure('INTERNAL', (error as Error).message, true, { cause: error });
      jobLog.warn({ code: failure.code, err: error, target: { url: job.url } }, 'run failed');
      return { ok: false, jobId: job.jobId, agentId, error: failure.toFailure() };
    } finally {
      inProgress.delete(thisRun);
      baseline?.runDone({ benchmarkIndex, alone: thisRun.overlapping === 0 });
    }
  };
}

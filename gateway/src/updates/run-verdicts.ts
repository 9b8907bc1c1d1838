import {
  benchmarkDriftLimit,
  digestSkeleton,
  driftBeyondLimit,
  extractRunMetrics,
  median,
  medianRunIndex,
  type DigestedRunResult,
  type RunMetrics,
  type RunVerdict,
} from '@perfwatch/common';
import type { ReceivedRun } from '../dispatch/run-outcome.ts';

/** What a verdict reads of a run: who measured it, in what conditions, and its digest. */
export type JudgedRun = Pick<DigestedRunResult, 'agentId' | 'conditions' | 'digest'>;

/**
 * When the gateway doubts a run. One table, cited by docs/measuring.md ("A verdict on every run"): a run is
 * suspect when its machine was slower or faster than the agent's calibration says, when another
 * run shared the agent with it, when Lighthouse itself warned about the run, or when its numbers
 * stand apart from the other runs of its device and location.
 */
export const VERDICT_RULES = {
  /**
   * Lighthouse's benchmark index of the run farther (a fraction) from the agent's baseline than
   * `benchmarkDriftLimit` allows: 15 %, or three robust standard deviations of the agent's own
   * lone readings when they spread wider (at most 40 %).
   */
  benchmarkDrift: benchmarkDriftLimit,
  /**
   * Anything but the run itself took more than this share of its host's CPU while it lasted (a
   * neighbour on one core of two takes about half; an idle host gives a run's neighbours a few
   * percent).
   */
  otherCpuShare: 0.25,
  /** Outliers are looked for among at least this many runs of one device and location that nothing else is doubted about. */
  outlierMinRuns: 3,
  /** A performance score more than this many points from the median score of the runs. */
  outlierScorePoints: 10,
  /** An LCP farther from the median LCP than this fraction of it and than `outlierLcpMs`, both. */
  outlierLcpFraction: 0.25,
  outlierLcpMs: 250,
  /** Extra runs an update makes per device and location to replace suspect ones (MAX_RETESTS). */
  maxRetests: 2,
} as const;

export interface Verdict {
  verdict: RunVerdict;
  reasons: string[];
  /**
   * On a suspect run: every reason is about its agent's host (its index off the baseline, its CPU
   * taken by others), none about the run itself. Such a run is not measured again: a re-test on
   * the same host would meet the same condition.
   */
  hostOnly?: true;
}

/**
 * Lighthouse warnings that are about the page, not the run: a redirect is the same on every run
 * (and visible in the result's final URL), and perfwatch's own note on a result shrunk to fit a
 * message says nothing of its numbers. Doubting every run of such a page would re-test it forever.
 */
const NOT_ABOUT_THE_RUN = [/was redirected to/i, /^perfwatch:/];
const MAX_WARNINGS = 3;
const MAX_REASON_CHARS = 300;

function percent(fraction: number): string {
  return `${Math.round(Math.abs(fraction) * 100)} %`;
}

const bounded = (reason: string) =>
  reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS - 1)}…` : reason;

/** What about the run's agent's host makes it doubtful: the machine's speed, its neighbours. */
function hostReasons(run: JudgedRun): string[] {
  const reasons: string[] = [];
  const c = run.conditions;
  if (c?.benchmarkIndex != null && c.baselineBenchmarkIndex) {
    const drift = driftBeyondLimit(c.benchmarkIndex, c.baselineBenchmarkIndex, c.benchmarkSpread);
    if (drift !== 0) {
      reasons.push(
        `benchmark index ${c.benchmarkIndex} is ${percent(drift)} ${drift < 0 ? 'below' : 'above'} the agent's baseline ${c.baselineBenchmarkIndex}`,
      );
    }
  }
  if (c?.otherCpuShare != null && c.otherCpuShare > VERDICT_RULES.otherCpuShare)
    reasons.push(`other processes took ${percent(c.otherCpuShare)} of the host's CPU during this run`);
  return reasons.map(bounded);
}

/** What in the run itself (other runs beside it, Lighthouse's warnings) makes it doubtful. */
function runReasons(run: JudgedRun): string[] {
  const reasons: string[] = [];
  const c = run.conditions;
  const others = Math.max(c?.concurrentRuns ?? 0, c?.overlappingRuns ?? 0);
  if (others > 0)
    reasons.push(
      `${others} other run${others === 1 ? ' was' : 's were'} in progress on agent ${run.agentId} during this run`,
    );
  const warnings = run.digest.lhr.runWarnings.filter((w) => !NOT_ABOUT_THE_RUN.some((re) => re.test(w)));
  for (const warning of warnings.slice(0, MAX_WARNINGS)) reasons.push(`Lighthouse warned: ${warning}`);
  return reasons.map(bounded);
}

/** Why each run's numbers stand apart from the others' (empty when they do not). */
function outlierReasons(metrics: readonly RunMetrics[]): string[][] {
  const reasons = metrics.map(() => [] as string[]);
  if (metrics.length < VERDICT_RULES.outlierMinRuns) return reasons;
  const scores = metrics.map((m) => m.performance).filter((v): v is number => v !== null);
  const lcps = metrics.map((m) => m.lcp).filter((v): v is number => v !== null);
  const medianScore = scores.length >= VERDICT_RULES.outlierMinRuns ? median(scores) : null;
  const medianLcp = lcps.length >= VERDICT_RULES.outlierMinRuns ? median(lcps) : null;
  metrics.forEach((m, i) => {
    if (
      medianScore !== null &&
      m.performance !== null &&
      Math.abs(m.performance - medianScore) > VERDICT_RULES.outlierScorePoints
    ) {
      reasons[i]!.push(
        `performance score ${m.performance} is ${Math.round(Math.abs(m.performance - medianScore))} points from the runs' median ${medianScore}`,
      );
    }
    if (medianLcp !== null && m.lcp !== null) {
      const off = Math.abs(m.lcp - medianLcp);
      if (off > VERDICT_RULES.outlierLcpMs && off > VERDICT_RULES.outlierLcpFraction * medianLcp) {
        reasons[i]!.push(
          `LCP ${Math.round(m.lcp)} ms is ${percent(off / medianLcp)} from the runs' median ${Math.round(medianLcp)} ms`,
        );
      }
    }
  });
  return reasons;
}

/**
 * The verdict on each of one device and location's runs, in the order given. Outliers are
 * looked for only among the runs nothing else is doubted about: a run slowed by a neighbour
 * would otherwise drag the median its re-test is compared with.
 */
export function judgeRuns(runs: readonly JudgedRun[]): Verdict[] {
  const host = runs.map(hostReasons);
  const own = runs.map(runReasons);
  const clean = runs.flatMap((run, i) => (host[i]!.length + own[i]!.length === 0 ? [i] : []));
  const outliers = outlierReasons(clean.map((i) => extractRunMetrics(digestSkeleton(runs[i]!.digest))));
  clean.forEach((runIndex, k) => own[runIndex]!.push(...outliers[k]!));
  return runs.map((_, i) => {
    const reasons = [...host[i]!, ...own[i]!];
    if (reasons.length === 0) return { verdict: 'reliable', reasons };
    return { verdict: 'suspect', reasons, ...(own[i]!.length === 0 ? { hostOnly: true as const } : {}) };
  });
}

/**
 * The representative run: Lighthouse's median (median-run.ts) among the reliable runs, or among
 * all of them when none is reliable (the result then says its median is suspect).
 */
export function representativeRunIndex(
  runs: ReadonlyArray<Pick<RunMetrics, 'fcp' | 'tti'> & { verdict?: RunVerdict }>,
): number {
  const reliable = runs.map((run, index) => ({ run, index })).filter(({ run }) => run.verdict !== 'suspect');
  if (reliable.length === 0 || reliable.length === runs.length) return medianRunIndex(runs);
  return reliable[medianRunIndex(reliable.map(({ run }) => run))]!.index;
}

/** A run of an update, and which run it measured again when it is a re-test. */
export type MeasuredRun = ReceivedRun & { retestOfRunIndex?: number };

/**
 * The run to measure again next, or null: the first suspect first-round run that no reliable
 * re-test stands in for yet, unless it was doubted only for its agent's host (Verdict.hostOnly),
 * or its last re-test was. `runs` are in run order, re-tests after the first round.
 */
export function nextRetest(runs: readonly MeasuredRun[]): MeasuredRun | null {
  const verdicts = judgeRuns(runs);
  // Runs a re-test already stands in for, or whose re-test met a condition of the host.
  const settled = new Set(
    runs
      .filter(
        (run, i) =>
          run.retestOfRunIndex !== undefined && (verdicts[i]!.verdict === 'reliable' || verdicts[i]!.hostOnly),
      )
      .map((run) => run.retestOfRunIndex),
  );
  const index = runs.findIndex(
    (run, i) =>
      run.retestOfRunIndex === undefined &&
      verdicts[i]!.verdict === 'suspect' &&
      !verdicts[i]!.hostOnly &&
      !settled.has(run.runIndex),
  );
  return index === -1 ? null : runs[index]!;
}

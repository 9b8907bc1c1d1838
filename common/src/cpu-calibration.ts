import { median } from './median-run.ts';

/**
 * Lighthouse's mobile runs slow the CPU down by a fixed 4× by default, which only emulates its
 * reference mid-tier phone on a machine like the one the default was chosen on (a benchmark
 * index of about 1,500). Lighthouse's throttling guide publishes a calculator for the
 * multiplier that matches a machine's benchmark index; these are its three linear pieces:
 *
 *   index ≥ 1300:  3 + (index − 1300) / 233   (1300 → 3×, 1533 → 4×, 2000 → 6×)
 *   800 – 1300:    2 + (index − 800) / 500    (800 → 2×)
 *   150 – 800:     1 + (index − 150) / 650    (150 → 1×)
 *
 * Below 150 a machine is slower than the phone itself: no slowdown can make it comparable.
 */
const MIN_BENCHMARK_INDEX = 150;

/**
 * How far (a fraction) a run's benchmark index may at least be from its agent's baseline before
 * the run is doubted (the gateway's verdicts), and, above it on a run made alone, before the
 * agent takes its baseline for stale and measures again. A machine whose own lone readings
 * spread wider gets a wider limit (benchmarkDriftLimit).
 */
const BENCHMARK_DRIFT_LIMIT = 0.15;

/** Robust standard deviations of the agent's own readings a run may drift before it is doubted. */
const SPREADS_ALLOWED = 3;
/** The widest limit an agent's spread can ask for: beyond it, the index says nothing any more. */
const MAX_DRIFT_LIMIT = 0.4;

/**
 * The drift allowed for an agent whose lone readings of the index spread by `spread` (a robust
 * relative standard deviation, cpu-baseline.ts): never tighter than what the machine itself
 * shows with nothing wrong, never tighter than BENCHMARK_DRIFT_LIMIT, never wider than 40 %.
 */
export function benchmarkDriftLimit(spread: number | undefined): number {
  if (spread === undefined || !Number.isFinite(spread)) return BENCHMARK_DRIFT_LIMIT;
  return Math.min(MAX_DRIFT_LIMIT, Math.max(BENCHMARK_DRIFT_LIMIT, SPREADS_ALLOWED * spread));
}

/**
 * How far (a signed fraction) a reading of the index lies from the baseline when it lies beyond
 * the drift limit for the baseline's `spread`; 0 within it. The gateway doubts such a run; the
 * agent takes a lone run within it as one more reading of its baseline.
 */
export function driftBeyondLimit(index: number, baseline: number, spread: number | undefined): number {
  const drift = index / baseline - 1;
  return Math.abs(drift) > benchmarkDriftLimit(spread) ? drift : 0;
}

/**
 * The median and the robust relative spread (1.4826 × the median absolute deviation, divided by
 * the median: a standard deviation's worth for normal noise, unmoved by a few outliers) of
 * readings of the benchmark index. Null for no readings.
 */
export function indexCentreAndSpread(readings: readonly number[]): { centre: number; spread: number } | null {
  if (readings.length === 0) return null;
  const centre = median(readings);
  if (centre <= 0) return null;
  const mad = median(readings.map((r) => Math.abs(r - centre)));
  return { centre, spread: (1.4826 * mad) / centre };
}

/** The CPU slowdown multiplier for a machine's benchmark index (two decimals), or null when none fits. */
export function cpuMultiplierFor(benchmarkIndex: number): number | null {
  if (!Number.isFinite(benchmarkIndex) || benchmarkIndex < MIN_BENCHMARK_INDEX) return null;
  const multiplier =
    benchmarkIndex >= 1300
      ? 3 + (benchmarkIndex - 1300) / 233
      : benchmarkIndex >= 800
        ? 2 + (benchmarkIndex - 800) / 500
        : 1 + (benchmarkIndex - 150) / 650;
  return Math.round(multiplier * 100) / 100;
}

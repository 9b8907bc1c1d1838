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
export const MIN_BENCHMARK_INDEX = 150;

/**
 * How far (a fraction) a run's benchmark index may be from its agent's baseline before the run
 * is doubted (the gateway's verdicts), and, above it on a run made alone, before the agent takes
 * its baseline for stale and measures again.
 */
export const BENCHMARK_DRIFT_LIMIT = 0.15;

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

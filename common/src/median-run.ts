/**
 * Picks the representative run the way Lighthouse's own `computeMedianRun` does
 * (lighthouse/core/lib/median-run.js): the run nearest, in Euclidean distance, to the
 * median FCP and the median TTI, ties broken by the lower TTI. Re-implemented over plain
 * metrics so the gateway needs neither Lighthouse nor the full results; a unit test holds
 * it to Lighthouse's implementation on real results.
 */

export interface MedianInput {
  fcp: number | null;
  tti: number | null;
}

/** The middle value, or the mean of the two middle ones; the runs' medians everywhere in perfwatch. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function isValid(run: MedianInput): run is { fcp: number; tti: number } {
  return (
    typeof run.fcp === 'number' && Number.isFinite(run.fcp) && typeof run.tti === 'number' && Number.isFinite(run.tti)
  );
}

/**
 * Index (0-based, into `runs`) of the representative run. Runs without FCP or TTI are left
 * out as Lighthouse's `filterToValidRuns` does; when no run has both, the first run stands.
 * Throws on an empty list: a location with no successful run has no median.
 */
export function medianRunIndex(runs: readonly MedianInput[]): number {
  if (runs.length === 0) throw new Error('medianRunIndex: no runs');
  const valid = runs
    .map((run, index) => ({ run, index }))
    .filter((entry): entry is { run: { fcp: number; tti: number }; index: number } => isValid(entry.run));
  if (valid.length === 0) return 0;
  const medianFcp = median(valid.map(({ run }) => run.fcp));
  const medianTti = median(valid.map(({ run }) => run.tti));
  const distance = ({ run }: { run: { fcp: number; tti: number } }) =>
    (medianFcp - run.fcp) ** 2 + (medianTti - run.tti) ** 2;
  // Array.prototype.sort is stable, like the one Lighthouse relies on.
  const sorted = [...valid].sort((a, b) => distance(a) - distance(b) || a.run.tti - b.run.tti);
  return sorted[0]!.index;
}

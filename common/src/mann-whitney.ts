import erfc from '@stdlib/math-base-special-erfc';

export interface MannWhitneyResult {
  /** U of the first sample: how many (x, y) pairs have x above y, ties counting one half. */
  u: number;
  /** Two-sided p-value: how likely samples this far apart are when both come from one distribution. */
  p: number;
  method: 'exact' | 'asymptotic';
}

/**
 * The two-sided Mann-Whitney U test, as SciPy's `mannwhitneyu(x, y, method='auto')` computes it
 * (a test holds it to SciPy's p-values, test/fixtures/stats): the exact distribution of U when a
 * sample has at most 8 values and no value repeats, else the normal approximation with tie and
 * continuity corrections. Written here because the npm packages for it give critical values,
 * not p-values; only the normal tail comes from a library.
 */
export function mannWhitneyU(x: readonly number[], y: readonly number[]): MannWhitneyResult {
  const n1 = x.length;
  const n2 = y.length;
  if (n1 === 0 || n2 === 0) throw new RangeError('mannWhitneyU: both samples need at least one value');
  const { ranks, tieSizes } = averageRanks([...x, ...y]);
  const r1 = ranks.slice(0, n1).reduce((a, b) => a + b, 0);
  const u1 = r1 - (n1 * (n1 + 1)) / 2;
  const u = Math.max(u1, n1 * n2 - u1);
  const ties = tieSizes.some((t) => t > 1);
  if ((n1 <= 8 || n2 <= 8) && !ties) return { u: u1, p: Math.min(1, 2 * exactUpperTail(n1, n2, u)), method: 'exact' };
  const n = n1 + n2;
  const tieTerm = tieSizes.reduce((sum, t) => sum + t ** 3 - t, 0);
  const sigma = Math.sqrt(((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1))));
  // Every value tied: the samples cannot be told apart.
  if (sigma === 0) return { u: u1, p: 1, method: 'asymptotic' };
  const z = (u - (n1 * n2) / 2 - 0.5) / sigma;
  // 2 × P(Z > z) = erfc(z / √2)
  return { u: u1, p: Math.min(1, Math.max(0, erfc(z / Math.SQRT2))), method: 'asymptotic' };
}

/** Ranks 1…n, tied values sharing the average of their ranks; and the size of each group of ties. */
function averageRanks(values: readonly number[]): { ranks: number[]; tieSizes: number[] } {
  const order = values.map((value, index) => ({ value, index })).sort((a, b) => a.value - b.value);
  const ranks = new Array<number>(values.length);
  const tieSizes: number[] = [];
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]!.value === order[i]!.value) j++;
    const rank = (i + j + 2) / 2;
    for (let k = i; k <= j; k++) ranks[order[k]!.index] = rank;
    tieSizes.push(j - i + 1);
    i = j + 1;
  }
  return { ranks, tieSizes };
}

/**
 * P(U ≥ u) for samples of n1 and n2 values without ties: the number of orderings giving each U,
 * counted by the recurrence c(m, n, u) = c(m − 1, n, u − n) + c(m, n − 1, u), over C(n1 + n2, n1).
 */
function exactUpperTail(n1: number, n2: number, u: number): number {
  const max = n1 * n2;
  // counts[m][n] is the list of counts by U for samples of m and n values.
  const counts: number[][][] = [];
  for (let m = 0; m <= n1; m++) {
    counts.push([]);
    for (let n = 0; n <= n2; n++) {
      const row = new Array<number>(m * n + 1).fill(0);
      if (m === 0 || n === 0) row[0] = 1;
      else {
        const withoutX = counts[m - 1]![n]!;
        const withoutY = counts[m]![n - 1]!;
        for (let k = 0; k <= m * n; k++) row[k] = (k - n >= 0 ? (withoutX[k - n] ?? 0) : 0) + (withoutY[k] ?? 0);
      }
      counts[m]!.push(row);
    }
  }
  const all = counts[n1]![n2]!;
  const total = all.reduce((a, b) => a + b, 0);
  let tail = 0;
  for (let k = Math.ceil(u); k <= max; k++) tail += all[k]!;
  return tail / total;
}

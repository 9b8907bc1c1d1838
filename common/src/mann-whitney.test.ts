import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { mannWhitneyU } from './mann-whitney.ts';

// SciPy's p-values for the same samples (scripts/mann-whitney-reference.py wrote the file).
const reference = JSON.parse(
  readFileSync(new URL('../../test/fixtures/stats/mann-whitney-reference.json', import.meta.url), 'utf8'),
) as {
  cases: Array<{ name: string; x: number[]; y: number[]; u: number; p: number }>;
};

describe('mannWhitneyU', () => {
  it.each(reference.cases.map((c) => [c.name, c] as const))("gives SciPy's U and two-sided p-value: %s", (_name, c) => {
    const result = mannWhitneyU(c.x, c.y);
    expect(result.u).toBe(c.u);
    expect(result.p).toBeCloseTo(c.p, 9);
  });

  it('uses the exact distribution for small samples without ties, the normal approximation otherwise', () => {
    expect(mannWhitneyU([1, 2, 3], [4, 5, 6]).method).toBe('exact');
    expect(mannWhitneyU([1, 2, 2], [4, 5, 6]).method).toBe('asymptotic');
    expect(
      mannWhitneyU(
        [...Array(9).keys()],
        [...Array(9).keys()].map((v) => v + 0.5),
      ).method,
    ).toBe('asymptotic');
  });

  it('cannot tell apart samples whose every value is the same, and refuses an empty sample', () => {
    expect(mannWhitneyU([72, 72, 72], [72, 72, 72]).p).toBe(1);
    expect(() => mannWhitneyU([], [1])).toThrow(/at least one value/);
  });
});

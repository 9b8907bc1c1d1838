import { computeMedianRun } from 'lighthouse/core/lib/median-run.js';
import { describe, expect, it } from 'vitest';
import { loadLhrs } from '../../test/support/lhr-fixtures.ts';
import { extractRunMetrics } from './run-metrics.ts';
import { medianRunIndex } from './median-run.ts';

describe('medianRunIndex', () => {
  it.each(['mobile', 'desktop'] as const)('picks the same run as Lighthouse on real %s results', (device) => {
    const runs = loadLhrs(device);
    // Every order of the three runs, so the choice cannot depend on position by luck.
    const orders = [
      [0, 1, 2],
      [0, 2, 1],
      [1, 0, 2],
      [1, 2, 0],
      [2, 0, 1],
      [2, 1, 0],
    ];
    for (const order of orders) {
      const ordered = order.map((i) => runs[i]!);
      const ours = ordered[medianRunIndex(ordered.map(extractRunMetrics))];
      expect(ours).toBe(computeMedianRun(ordered as never));
    }
  });

  it('agrees with Lighthouse on spread-out synthetic runs, ties broken by lower TTI', () => {
    const cases = [
      [
        { fcp: 1000, tti: 5000 },
        { fcp: 1100, tti: 5200 },
        { fcp: 3000, tti: 9000 },
      ],
      [
        { fcp: 900, tti: 2000 },
        { fcp: 1000, tti: 2500 },
        { fcp: 1100, tti: 2000 },
        { fcp: 800, tti: 4000 },
      ],
      [
        { fcp: 1000, tti: 3000 },
        { fcp: 1000, tti: 1000 },
      ],
    ];
    for (const runs of cases) {
      const asLhrs = runs.map((r) => ({
        audits: { 'first-contentful-paint': { numericValue: r.fcp }, interactive: { numericValue: r.tti } },
      }));
      expect(asLhrs[medianRunIndex(runs)]).toBe(computeMedianRun(asLhrs as never));
    }
  });

  it('leaves out runs without FCP or TTI, as filterToValidRuns does', () => {
    expect(
      medianRunIndex([
        { fcp: null, tti: 100 },
        { fcp: 500, tti: 2000 },
        { fcp: 520, tti: 2100 },
        { fcp: 9000, tti: 9000 },
      ]),
    ).toBe(2);
  });

  it('gives the only run, and the first run when none is valid', () => {
    expect(medianRunIndex([{ fcp: 1, tti: 2 }])).toBe(0);
    expect(
      medianRunIndex([
        { fcp: null, tti: null },
        { fcp: null, tti: 5 },
      ]),
    ).toBe(0);
    expect(() => medianRunIndex([])).toThrow(/no runs/);
  });
});

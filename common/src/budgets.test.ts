import { describe, expect, it } from 'vitest';
import type { AuditResult } from './audit-result.ts';
import { budgetFileSchema, BudgetSpecError, evaluateBudgets, parseLimit } from './budgets.ts';

function cell(performance: number, lcp: number, tbt: number) {
  return {
    lighthouse: {
      crux: { url: null },
      date: '2026-11-22T10:00:00',
      elementCount: 10,
      categories: { performance: { score: performance / 100 }, seo: { score: 1 } },
      audits: { 'largest-contentful-paint': { numericValue: lcp }, 'total-blocking-time': { numericValue: tbt } },
    },
    median: 1,
    locations: ['london' as const],
    defaultLocation: 'london' as const,
    runs: [],
  };
}

const result = (performance: number, lcp: number, tbt: number): AuditResult => ({
  mobile: { london: cell(performance, lcp, tbt) },
  desktop: { london: cell(99, 800, 0) },
});

describe('parseLimit', () => {
  it('reads KEY=NUMBER and refuses unknown keys, scores above 100 and other shapes', () => {
    expect(parseLimit('performance=90')).toEqual(['performance', 90]);
    expect(parseLimit('cls=0.1')).toEqual(['cls', 0.1]);
    expect(() => parseLimit('perf=90')).toThrow(/unknown budget key "perf"/);
    expect(() => parseLimit('seo=101')).toThrow(BudgetSpecError);
    expect(() => parseLimit('lcp<2500')).toThrow(/not KEY=NUMBER/);
  });
});

describe('evaluateBudgets', () => {
  const budgets = budgetFileSchema.parse({ budgets: { performance: 90, lcp: 2500 } });

  it('passes when every cell meets every budget: scores are floors, metrics ceilings', () => {
    const report = evaluateBudgets(result(90, 2500, 0), budgets);
    expect(report.pass).toBe(true);
    expect(report.cells.map((c) => `${c.device}/${c.location}`)).toEqual(['mobile/london', 'desktop/london']);
  });

  it('fails on one missed budget in one cell, and says what and by how much', () => {
    const report = evaluateBudgets(result(89, 2600, 0), budgets);
    expect(report.pass).toBe(false);
    const failed = report.cells.flatMap((c) =>
      c.checks.filter((check) => !check.pass).map((check) => `${c.device} ${check.message}`),
    );
    expect(failed).toEqual([
      'mobile performance score 89, budget at least 90',
      'mobile LCP 2600 ms, budget at most 2500 ms',
    ]);
  });

  it('fails a budget on a value the result does not have, rather than passing it', () => {
    const report = evaluateBudgets(result(95, 1000, 0), budgetFileSchema.parse({ budgets: { accessibility: 50 } }));
    expect(report.pass).toBe(false);
    expect(report.cells[0]!.checks[0]!.message).toBe('accessibility score not measured, budget at least 50');
  });

  it('holds each cell to its previous value: score points down, metric percent up', () => {
    const limits = budgetFileSchema.parse({ maxRegression: { performance: 5, tbt: 20 } });
    const within = evaluateBudgets(result(92, 1000, 240), limits, result(97, 1000, 200));
    expect(within.pass).toBe(true);
    const beyond = evaluateBudgets(result(91, 1000, 250), limits, result(97, 1000, 200));
    expect(beyond.cells[0]!.checks.map((c) => [c.pass, c.message])).toEqual([
      [false, 'performance score 91, previous 97 (-6 points, at most -5 allowed)'],
      [false, 'TBT 250 ms, previous 200 ms (+25.0 %, at most +20 % allowed)'],
    ]);
    // The first snapshot has nothing to regress from.
    expect(evaluateBudgets(result(10, 1000, 9000), limits).pass).toBe(true);
  });

  it('fails an empty result: nothing measured is not a pass', () => {
    expect(evaluateBudgets({}, budgets).pass).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { budgetFileSchema, BudgetSpecError, evaluateBudgets, parseLimit } from './budgets.ts';
import { budgetedResult } from '../../test/support/budget-results.ts';

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
    const report = evaluateBudgets(budgetedResult(90, 2500, 0), budgets);
    expect(report.pass).toBe(true);
    expect(report.cells.map((c) => `${c.device}/${c.location}`)).toEqual(['mobile/london', 'desktop/london']);
  });

  it('fails on one missed budget in one cell, and says what and by how much', () => {
    const report = evaluateBudgets(budgetedResult(89, 2600, 0), budgets);
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
    const report = evaluateBudgets(
      budgetedResult(95, 1000, 0),
      budgetFileSchema.parse({ budgets: { accessibility: 50 } }),
    );
    expect(report.pass).toBe(false);
    expect(report.cells[0]!.checks[0]!.message).toBe('accessibility score not measured, budget at least 50');
  });

  it('holds each cell to its previous value: score points down, metric percent up', () => {
    const limits = budgetFileSchema.parse({ maxRegression: { performance: 5, tbt: 20 } });
    const within = evaluateBudgets(budgetedResult(92, 1000, 240), limits, budgetedResult(97, 1000, 200));
    expect(within.pass).toBe(true);
    const beyond = evaluateBudgets(budgetedResult(91, 1000, 250), limits, budgetedResult(97, 1000, 200));
    expect(beyond.cells[0]!.checks.map((c) => [c.pass, c.message])).toEqual([
      [false, 'performance score 91, previous 97 (-6 points, at most -5 allowed)'],
      [false, 'TBT 250 ms, previous 200 ms (+25.0 %, at most +20 % allowed)'],
    ]);
    // The first snapshot has nothing to regress from.
    expect(evaluateBudgets(budgetedResult(10, 1000, 9000), limits).pass).toBe(true);
  });

  it('fails an empty result: nothing measured is not a pass', () => {
    expect(evaluateBudgets({}, budgets).pass).toBe(false);
  });
});

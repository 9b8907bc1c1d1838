import { describe, expect, it } from 'vitest';
import {
  budgetFileSchema,
  BudgetSpecError,
  checkCell,
  checkId,
  evaluateBudgets,
  limitsSchema,
  parseLimit,
  storedBudgets,
  storedBudgetsSchema,
  type MeasuredSteps,
} from './budgets.ts';
import { stepRunSummary, stepSkeleton } from './flow-results.ts';
import { budgetedResult } from '../../test/support/budget-results.ts';
import { loadFlowSteps } from '../../test/support/lhr-fixtures.ts';

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

describe('budgets of a flow’s steps', () => {
  /** The real flow's steps as a cell gives them to budgets; the timespan's INP is 134.6 ms. */
  const flowSteps = (inp?: number): MeasuredSteps =>
    loadFlowSteps().map(({ name, lhr }) => {
      if (inp !== undefined && lhr.audits['interaction-to-next-paint'])
        lhr.audits['interaction-to-next-paint'].numericValue = inp;
      return { name, lighthouse: lhr };
    });
  const page = loadFlowSteps()[0]!.lhr;
  const check = (limits: Record<string, number>, steps = flowSteps()) =>
    checkCell(page, budgetFileSchema.parse({ budgets: limits }), undefined, { current: steps });

  it('reads a key scoped to a step, and refuses INP unscoped and step names that are not a step’s', () => {
    expect(parseLimit('add to cart.inp=200')).toEqual(['add to cart.inp', 200]);
    expect(parseLimit(' cart.accessibility=90 ')).toEqual(['cart.accessibility', 90]);
    expect(() => parseLimit('inp=200')).toThrow(
      "inp is measured in a flow's timespan steps: give it as <step>.inp (e.g. checkout.inp)",
    );
    expect(() => parseLimit('.inp=200')).toThrow(/a step name is letters, digits, spaces, _ and -/);
    expect(() => parseLimit('add.to cart.inp=200')).toThrow(/"add.to cart.inp": a step name is/);
    expect(() => parseLimit(`${'s'.repeat(41)}.inp=200`)).toThrow(/up to 40/);
    expect(() => parseLimit('add to cart.interaction=200')).toThrow(/unknown budget key "interaction"/);
    expect(() => parseLimit('cart.seo=101')).toThrow('cart.seo is a score from 0 to 100, not 101');
  });

  it('takes the same keys in a budget file as in flags', () => {
    const limits = limitsSchema('budgets');
    expect(limits.parse({ 'add to cart.inp': 200, lcp: 2500 })).toEqual({ 'add to cart.inp': 200, lcp: 2500 });
    const messages = (value: unknown) => {
      const parsed = limits.safeParse(value);
      return parsed.success ? [] : parsed.error.issues.map((issue) => issue.message);
    };
    expect(messages({ inp: 200 })).toEqual([
      "budgets: inp is measured in a flow's timespan steps: give it as <step>.inp (e.g. checkout.inp)",
    ]);
    expect(messages({ 'add/cart.inp': 200 })).toEqual([
      'budgets: "add/cart.inp": a step name is letters, digits, spaces, _ and -, up to 40',
    ]);
    expect(messages({ 'cart.performance': 120 })).toEqual([
      'budgets: cart.performance is a score from 0 to 100, not 120',
    ]);
  });

  it('checks a step key against the step of that name, whatever its case, and the page keys against the page', () => {
    const checks = check({ 'Add To Cart.inp': 200, 'cart.accessibility': 50, fcp: 60_000 });
    expect(checks.map((c) => [c.step, c.key, c.pass, c.message])).toEqual([
      ['Add To Cart', 'inp', true, 'Add To Cart: INP 135 ms, budget at most 200 ms'],
      ['cart', 'accessibility', true, expect.stringMatching(/^cart: accessibility score \d+, budget at least 50$/)],
      [undefined, 'fcp', true, expect.stringMatching(/^FCP \d+ ms, budget at most 60000 ms$/)],
    ]);
    expect(checks[0]!.actual).toBeCloseTo(134.6, 1);
    expect(check({ 'add to cart.inp': 100 })[0]).toMatchObject({ pass: false, limit: 100 });
  });

  it('fails a step the flow lacks as not measured, rather than passing it', () => {
    expect(check({ 'checkout.inp': 200 })).toEqual([
      {
        key: 'inp',
        step: 'checkout',
        actual: null,
        kind: 'budget',
        limit: 200,
        pass: false,
        message: 'checkout: INP not measured, budget at most 200 ms',
      },
    ]);
    // A page that is no flow has no steps at all.
    expect(checkCell(page, budgetFileSchema.parse({ budgets: { 'cart.seo': 50 } }))[0]!.message).toBe(
      'cart: SEO score not measured, budget at least 50',
    );
  });

  it("holds a step to the previous snapshot's step, read from the stored step's median run", () => {
    const previousSteps = loadFlowSteps().map(({ name, lhr }) => {
      lhr.audits['interaction-to-next-paint'] &&= { ...lhr.audits['interaction-to-next-paint'], numericValue: 100 };
      return { name, lighthouse: stepSkeleton({ median: 1, runs: [stepRunSummary(lhr)] }) };
    });
    const limits = budgetFileSchema.parse({ maxRegression: { 'add to cart.inp': 20, 'cart.accessibility': 0 } });
    const checks = checkCell(page, limits, page, { current: flowSteps(), previous: previousSteps });
    expect(checks.map((c) => [c.step, c.kind, c.pass, c.message])).toEqual([
      ['add to cart', 'regression', false, 'add to cart: INP 135 ms, previous 100 ms (+34.6 %, at most +20 % allowed)'],
      ['cart', 'regression', true, expect.stringMatching(/^cart: accessibility score (\d+), previous \1 \(\+0 points/)],
    ]);
    expect(checkCell(page, limits, page, { current: flowSteps(110), previous: previousSteps })[0]!.pass).toBe(true);
    // The previous snapshot was no flow, or had no such step: nothing to regress from.
    expect(checkCell(page, limits, page, { current: flowSteps() })).toEqual([]);
  });

  it('names a step check apart from the page’s in check ids', () => {
    expect(checkId({ kind: 'budget', key: 'inp', step: 'add to cart' })).toBe('budget:add to cart.inp');
    expect(checkId({ kind: 'regression', key: 'lcp' })).toBe('regression:lcp');
  });
});

describe('budgets as stores keep them', () => {
  const budgets = budgetFileSchema.parse({
    budgets: { performance: 90, 'add to cart.inp': 200 },
    maxRegression: { 'cart.accessibility': 5 },
  });

  it('are lists of {key, limit} (no dot in a field name), read back as they were', () => {
    const stored = storedBudgets(budgets);
    expect(stored).toEqual({
      budgets: [
        { key: 'performance', limit: 90 },
        { key: 'add to cart.inp', limit: 200 },
      ],
      maxRegression: [{ key: 'cart.accessibility', limit: 5 }],
    });
    expect(storedBudgetsSchema.parse(JSON.parse(JSON.stringify(stored)))).toEqual(budgets);
  });

  it('read the object form stored before step budgets', () => {
    expect(storedBudgetsSchema.parse({ budgets: { performance: 90, lcp: 2500 } })).toEqual({
      budgets: { performance: 90, lcp: 2500 },
      maxRegression: {},
    });
  });

  it('refuse, read back, what budgets refuse when sent', () => {
    expect(storedBudgetsSchema.safeParse({ budgets: [{ key: 'inp', limit: 200 }], maxRegression: [] }).success).toBe(
      false,
    );
    expect(
      storedBudgetsSchema.safeParse({ budgets: [{ key: '__proto__', limit: 1 }], maxRegression: [] }).success,
    ).toBe(false);
  });
});

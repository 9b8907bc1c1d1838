import { describe, expect, it } from 'vitest';
import { budgetFileSchema, evaluateBudgets } from '@perfwatch/common';
import { budgetJunitXml } from './budget-junit.ts';
import { budgetedResult } from '../../test/support/budget-results.ts';

describe('budgetJunitXml', () => {
  it('writes a suite per cell and a failure per missed check, escaped', () => {
    const xml = budgetJunitXml(
      'https://shop.example/?a=1&b=<2>',
      evaluateBudgets(budgetedResult(89, 1000, 0), budgetFileSchema.parse({ budgets: { performance: 90, lcp: 2500 } })),
      12.5,
    );
    expect(xml).toMatch(
      /<testsuites name="perfwatch https:\/\/shop.example\/\?a=1&amp;b=&lt;2>" tests="4" failures="1"/,
    );
    expect(xml).toContain('<failure message="performance score 89, budget at least 90" type="BudgetExceeded"/>');
    expect(xml.match(/<testsuite /g)).toHaveLength(2);
  });

  it('reports a failed update as one failing case', () => {
    const xml = budgetJunitXml('https://shop.example/', { error: 'update 1 failed: no agent' }, 3);
    expect(xml).toMatch(/tests="1" failures="1"/);
    expect(xml).toContain('type="UpdateFailed"');
  });
});

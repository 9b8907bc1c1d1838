import { describe, expect, it } from 'vitest';
import { budgetFileSchema, evaluateBudgets, type AuditResult } from '@perfwatch/common';
import { budgetJunitXml } from './budget-junit.ts';

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

describe('budgetJunitXml', () => {
  it('writes a suite per cell and a failure per missed check, escaped', () => {
    const xml = budgetJunitXml(
      'https://shop.example/?a=1&b=<2>',
      evaluateBudgets(result(89, 1000, 0), budgetFileSchema.parse({ budgets: { performance: 90, lcp: 2500 } })),
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

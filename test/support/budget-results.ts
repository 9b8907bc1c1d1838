import type { AuditResult } from '@perfwatch/common';

/** One London cell of an audit result with the scores and metrics budgets read. */
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

/** An audit result whose mobile cell has these figures, beside a desktop cell that meets any budget. */
export const budgetedResult = (performance: number, lcp: number, tbt: number): AuditResult => ({
  mobile: { london: cell(performance, lcp, tbt) },
  desktop: { london: cell(99, 800, 0) },
});

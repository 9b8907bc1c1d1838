import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { lighthouseKpis, performanceKpi } from './lighthouse-kpis.ts';
import { extractElementCount, extractRunMetrics } from './run-metrics.ts';

describe('LIGHTHOUSE KPIs on real Lighthouse 13 results', () => {
  it.each(['mobile', 'desktop'] as const)('gives the performance KPI in ms and 0–100 for %s', (device) => {
    const lhr = loadLhr(device, 1);
    const kpi = performanceKpi(lhr);
    expect(kpi.fcp).toBeCloseTo(lhr.audits['first-contentful-paint']!.numericValue!, 1);
    expect(kpi.si).toBeCloseTo(lhr.audits['speed-index']!.numericValue!, 1);
    expect(kpi.tti).toBeCloseTo(lhr.audits['interactive']!.numericValue!, 1);
    expect(kpi.mpFID).toBeCloseTo(lhr.audits['max-potential-fid']!.numericValue!, 1);
    expect(kpi.score).toBe(Math.round(lhr.categories['performance']!.score! * 100));
    // Lighthouse 13 computes neither first-meaningful-paint nor first-cpu-idle.
    expect(kpi.fmp).toBeNull();
    expect(kpi.fCPUi).toBeNull();
    // Version 2: the lab Core Web Vitals beside them; INP needs interactions a navigation has not.
    expect(kpi.lcp).toBeCloseTo(lhr.audits['largest-contentful-paint']!.numericValue!, 1);
    expect(kpi.tbt).toBeCloseTo(lhr.audits['total-blocking-time']!.numericValue!, 1);
    expect(kpi.cls).toBeCloseTo(lhr.audits['cumulative-layout-shift']!.numericValue!, 3);
    expect(kpi.ttfb).toBeCloseTo(lhr.audits['server-response-time']!.numericValue!, 1);
    expect(kpi.inp).toBeNull();
  });

  it('emits every named category, the new ones in snake_case, and the legacy PWA keys as null', () => {
    const lhr = loadLhr('mobile', 2);
    const byKpi = Object.fromEntries(lighthouseKpis(lhr).map((r) => [r.kpi, r]));
    expect(Object.keys(byKpi).sort()).toEqual([
      'accessibility',
      'agentic_browsing',
      'best_practices',
      'performance',
      'pwa',
      'pwa_checks',
      'seo',
    ]);
    expect(byKpi['best_practices']!.data).toEqual({
      score: Math.round(lhr.categories['best-practices']!.score! * 100),
    });
    expect(byKpi['seo']!.data).toEqual({ score: Math.round(lhr.categories['seo']!.score! * 100) });
    expect(byKpi['pwa']!.data).toEqual({ score: null });
    expect(byKpi['pwa_checks']!.data).toEqual({ 'pwa-optimized': null, 'pwa-installable': null });
    expect(new Set(lighthouseKpis(lhr).map((r) => r.section))).toEqual(new Set(['LIGHTHOUSE']));
  });

  it('counts passed/total PWA checks where a (pre-12) result still has the category', () => {
    const lhr = loadLhr('mobile', 1);
    lhr.categories['pwa'] = {
      id: 'pwa',
      score: 0.5,
      auditRefs: [
        { id: 'pwa-a', group: 'pwa-optimized' },
        { id: 'pwa-b', group: 'pwa-optimized' },
        { id: 'pwa-c', group: 'pwa-installable' },
      ],
    };
    lhr.audits['pwa-a'] = { id: 'pwa-a', score: 1 };
    lhr.audits['pwa-b'] = { id: 'pwa-b', score: 1 };
    lhr.audits['pwa-c'] = { id: 'pwa-c', score: 0 };
    const checks = lighthouseKpis(lhr).find((r) => r.kpi === 'pwa_checks')!.data;
    expect(checks).toEqual({ 'pwa-optimized': '2/2', 'pwa-installable': '0/1' });
  });

  it('reads the element count from dom-size-insight', () => {
    const count = extractElementCount(loadLhr('desktop', 1));
    // The fixture page has about 460 elements in its markup.
    expect(count).toBeGreaterThan(400);
    expect(count).toBeLessThan(600);
  });

  it('keeps the key metrics of a run', () => {
    const metrics = extractRunMetrics(loadLhr('mobile', 3));
    for (const value of Object.values(metrics)) expect(typeof value).toBe('number');
    expect(metrics.lcp).toBeGreaterThanOrEqual(metrics.fcp!);
  });
});

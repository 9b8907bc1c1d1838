import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { pageSourceKpis, savingsKpis } from './page-kpis.ts';

describe('PAGE_SOURCE and SAVINGS KPIs on real Lighthouse 13 results', () => {
  it("counts the page's elements, HTML bytes, requests and transfer", () => {
    const lhr = loadLhr('mobile', 1);
    const byKpi = Object.fromEntries(pageSourceKpis(lhr).map((r) => [r.kpi, r.data as Record<string, number>]));
    // index.html, site.css, app.js, hero.svg and dot.svg, plus the favicon request.
    expect(byKpi['requests']!['count']).toBeGreaterThanOrEqual(5);
    expect(byKpi['requests']!['transferBytes']).toBeGreaterThan(byKpi['dom']!['htmlBytes']!);
    // The fixture's index.html is about 13.9 kB on disk.
    expect(byKpi['dom']!['htmlBytes']).toBeGreaterThan(13_000);
    expect(byKpi['dom']!['htmlBytes']).toBeLessThan(15_000);
    expect(byKpi['dom']!['elementCount']).toBeGreaterThan(400);
    expect(byKpi['mixed_content']).toEqual({ count: 0 });
  });

  it('counts http subresources of an https page as mixed content', () => {
    const lhr = loadLhr('desktop', 1);
    const text = JSON.stringify(lhr).replaceAll('http://fixture.test/index.html', 'https://fixture.test/index.html');
    const secure = JSON.parse(text) as typeof lhr;
    const mixed = pageSourceKpis(secure).find((r) => r.kpi === 'mixed_content')!.data as { count: number };
    expect(mixed.count).toBe((secure.audits['network-requests']!.details as { items: unknown[] }).items.length - 1);
  });

  it('sums the savings failing audits claim, and only theirs', () => {
    const lhr = loadLhr('mobile', 1);
    const [record] = savingsKpis(lhr);
    const data = record!.data as { bytes: number; ms: number; count: number };
    const failingWithMs = Object.values(lhr.audits).filter(
      (a) =>
        typeof a.score === 'number' &&
        a.score < 1 &&
        Math.max(a.metricSavings?.['LCP'] ?? 0, a.metricSavings?.['FCP'] ?? 0) > 0,
    );
    expect(data.ms).toBe(
      Math.round(
        failingWithMs.reduce((s, a) => s + Math.max(a.metricSavings!['LCP'] ?? 0, a.metricSavings!['FCP'] ?? 0), 0),
      ),
    );
    expect(data.count).toBeGreaterThanOrEqual(failingWithMs.length);

    // A passing audit's claim does not count; a failing opportunity's bytes do.
    lhr.audits['unused-javascript'] = {
      ...lhr.audits['unused-javascript']!,
      score: 0.5,
      details: { type: 'opportunity', overallSavingsBytes: 12_345, items: [] },
    };
    const more = savingsKpis(lhr)[0]!.data as { bytes: number; count: number };
    expect(more.bytes).toBe(data.bytes + 12_345);
    expect(more.count).toBe(data.count + 1);
  });
});

import { describe, expect, it } from 'vitest';
import { pageMetricsText } from './page-exposition.ts';

describe('page metrics exposition', () => {
  it('one series per project, cell and KPI, in the units of the API, with the left-out count', async () => {
    const { contentType, text } = await pageMetricsText({
      pages: [
        {
          url: 'https://shop.example/a?x="1"',
          date: new Date('2026-11-20T10:00:00Z'),
          cells: [{ device: 'mobile', location: 'london', kpis: { score: 87, lcp: 2345.6, cls: 0.012 } }],
        },
      ],
      leftOut: 3,
    });
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const project = 'project="https://shop.example/a?x=\\"1\\""';
    expect(text).toContain(`perfwatch_page_kpi{${project},device="mobile",location="london",kpi="score"} 87`);
    expect(text).toContain(`perfwatch_page_kpi{${project},device="mobile",location="london",kpi="lcp"} 2345.6`);
    expect(text).toContain(`perfwatch_page_kpi{${project},device="mobile",location="london",kpi="cls"} 0.012`);
    // A KPI the run has no value for is no series, not a zero.
    expect(text).not.toContain('kpi="tbt"');
    expect(text).toContain(
      `perfwatch_page_snapshot_timestamp_seconds{${project},device="mobile",location="london"} 1795168800`,
    );
    expect(text).toMatch(/^perfwatch_page_projects_left_out 3$/m);
    expect(text).toMatch(/^perfwatch_page_projects 1$/m);
    expect(text).toMatch(/^# HELP perfwatch_page_kpi .*milliseconds/m);
  });

  it('no projects: the counts alone', async () => {
    const { text } = await pageMetricsText({ pages: [], leftOut: 0 });
    expect(text).not.toMatch(/^perfwatch_page_kpi\{/m);
    expect(text).toMatch(/^perfwatch_page_projects 0$/m);
  });
});

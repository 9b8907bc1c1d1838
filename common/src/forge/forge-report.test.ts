import { describe, expect, it } from 'vitest';
import type { AuditResult } from '../audit-result.ts';
import type { CompareResult } from '../compare-result.ts';
import { commitStatuses, reportComment, reportMarker, type ChangeReport } from './forge-report.ts';
import { MAX_STATUS_DESCRIPTION } from './forge-client.ts';

const run = (performance: number, lcp: number, verdict: 'reliable' | 'suspect' = 'reliable') => ({
  performance,
  lcp,
  fcp: 900,
  si: 1200,
  tti: 2000,
  tbt: 150,
  cls: 0.02,
  verdict,
});

const cell = (runs: ReturnType<typeof run>[]) => ({
  lighthouse: { crux: { url: null }, date: '2026-11-26T10:05:12', elementCount: 40 },
  median: 2,
  locations: ['frankfurt' as const],
  defaultLocation: 'frankfurt' as const,
  runs,
  verification: { reliableRuns: 2, suspectRuns: 1, retests: 1, median: 'reliable' as const },
});

const result: AuditResult = {
  mobile: { frankfurt: cell([run(70, 3100), run(71, 3210), run(40, 9000, 'suspect')]) },
  missing: [{ device: 'desktop', location: 'frankfurt', reason: 'no agent answered' }],
};

const compared: CompareResult = {
  url: 'https://pr-7.preview.example/',
  from: '2026-11-26T09:00:00',
  to: '2026-11-26T10:05:12',
  cells: [
    {
      device: 'mobile',
      location: 'frankfurt',
      metrics: [
        {
          metric: 'performance',
          from: 92,
          to: 71,
          difference: -21,
          significance: { test: 'mann-whitney-u', p: 0.0079, beyondNoise: true, runs: { from: 5, to: 5 } },
        },
        {
          metric: 'lcp',
          from: 2100,
          to: 3210,
          difference: 1110,
          significance: { test: 'not enough runs', runs: { from: 2, to: 2 } },
        },
      ],
      audits: [],
      opportunities: [],
    },
  ],
  unmatched: [],
};

const report = (overrides: Partial<ChangeReport> = {}): ChangeReport => ({
  url: 'https://pr-7.preview.example/',
  baseUrl: 'https://shop.example/',
  date: '2026-11-26T10:05:12',
  result,
  budgets: {
    pass: false,
    cells: [
      {
        device: 'mobile',
        location: 'frankfurt',
        checks: [
          {
            key: 'lcp',
            actual: 3210,
            kind: 'budget',
            limit: 2500,
            pass: false,
            message: 'LCP 3210 ms, budget at most 2500 ms',
          },
        ],
      },
    ],
  },
  comparison: { baseUrl: 'https://shop.example/', compared },
  revision: { commit: 'c'.repeat(40), branch: 'slower', pullRequest: 7 },
  link: (c) => `https://perfwatch.example/dashboard/#/compare?cell=${c ? `${c.device}-${c.location}` : 'all'}`,
  ...overrides,
});

describe('the report on a change', () => {
  it('one status per cell: failure on a failed budget, error on a cell not measured, with its link', () => {
    const statuses = commitStatuses(report());
    expect(statuses.map((s) => [s.context, s.state])).toEqual([
      ['perfwatch/mobile/frankfurt', 'failure'],
      ['perfwatch/desktop/frankfurt', 'error'],
    ]);
    expect(statuses[0]!.description).toBe(
      'perf 71 (−21) · LCP 3.21 s (+1.11 s) · TBT 150 ms · CLS 0.020 · 1 budget failed',
    );
    expect(statuses[0]!.targetUrl).toContain('cell=mobile-frankfurt');
    expect(statuses[1]!.description).toContain('no agent answered');
  });

  it('a status passes when its cell passes its budgets, and its description stays within 140', () => {
    const passing = report({
      budgets: { pass: true, cells: [{ device: 'mobile', location: 'frankfurt', checks: [] }] },
    });
    expect(commitStatuses(passing)[0]!.state).toBe('success');
    const long = commitStatuses(
      report({ result: { ...result, missing: [{ ...result.missing![0]!, reason: 'x'.repeat(500) }] } }),
    );
    expect(long.every((s) => s.description.length <= MAX_STATUS_DESCRIPTION)).toBe(true);
  });

  it('the comment: marker first, base against head with p-values, budgets, runs and the link', () => {
    const comment = reportComment(report());
    // Named by the page previewed, not the preview: a preview's host may change with every push.
    expect(comment.startsWith(reportMarker('https://shop.example/'))).toBe(true);
    expect(comment).toContain('budgets failed ❌');
    expect(comment).toContain('Base: https://shop.example/ at 2026-11-26T09:00:00 UTC');
    expect(comment).toContain('| mobile · frankfurt | Performance | 92 | 71 | −21 | **0.008** |');
    expect(comment).toContain('| mobile · frankfurt | LCP | 2.10 s | 3.21 s | +1.11 s | n/a (2 vs 2 runs) |');
    expect(comment).toContain('- ❌ mobile · frankfurt: LCP 3210 ms, budget at most 2500 ms');
    expect(comment).toContain('desktop · frankfurt: not measured (no agent answered)');
    expect(comment).toContain('mobile · frankfurt: 2 reliable, 1 suspect, 1 re-test');
    expect(comment).toContain(`commit \`${'c'.repeat(12)}\` · branch \`slower\` · #7`);
    expect(comment).toContain('(https://perfwatch.example/dashboard/#/compare?cell=all)');
  });

  it('without a base it says why, and shows the head alone', () => {
    const comment = reportComment(report({ comparison: { unavailable: 'the base URL has no snapshot yet' } }));
    expect(comment).toContain('Base: none to compare with (the base URL has no snapshot yet)');
    expect(comment).toContain('| mobile · frankfurt | LCP | – | 3.21 s | – | – |');
  });

  it("a page's text cannot break the table or hide a marker", () => {
    const comment = reportComment(
      report({ url: 'https://shop.example/a|b', comparison: { unavailable: '<!-- x --> | y' } }),
    );
    expect(comment).not.toContain('<!-- x -->');
    expect(comment).toContain('&lt;!-- x --&gt;');
  });
});

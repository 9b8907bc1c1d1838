import { describe, expect, it } from 'vitest';
import { auditResultTable, compareTable } from './result-tables.ts';

describe('auditResultTable', () => {
  it('gives a cell that was not measured its own row, with the reason', () => {
    const text = auditResultTable({
      missing: [{ device: 'mobile', location: 'tokyo', reason: 'NO_RESPONDERS: no agent serves tokyo' }],
    });
    const row = text.split('\n').find((line) => line.includes('tokyo'));
    expect(row).toMatch(/mobile\s+│\s+tokyo\s+│\s+not measured: NO_RESPONDERS: no agent serves tokyo/);
  });
  it('says how many runs were suspect and re-tested, and lists each suspect run with its reasons', () => {
    const run = { fcp: 1000, lcp: 1500, si: 1200, tti: 2000, tbt: 100, cls: 0, performance: 90, agentId: 'fra-1' };
    const shared = {
      ...run,
      verdict: 'suspect' as const,
      reasons: ['1 other run was in progress on agent fra-1 during this run'],
    };
    const text = auditResultTable({
      mobile: {
        frankfurt: {
          lighthouse: { crux: { url: null }, date: '2026-11-23T10:00:00', elementCount: 400 },
          median: 4,
          locations: ['frankfurt'],
          defaultLocation: 'frankfurt',
          runs: [
            shared,
            shared,
            { ...run, verdict: 'reliable', reasons: [], retestOf: 1 },
            { ...run, verdict: 'reliable', reasons: [], retestOf: 2 },
          ],
          verification: { reliableRuns: 2, suspectRuns: 2, retests: 2, median: 'reliable' },
        },
      },
    });
    expect(text).toMatch(/frankfurt\s+│.*│\s+4 of 4, 2 suspect, 2 re-tests\s+│/);
    expect(text.split('\n').slice(-2)).toEqual([
      'mobile/frankfurt run 1 suspect: 1 other run was in progress on agent fra-1 during this run',
      'mobile/frankfurt run 2 suspect: 1 other run was in progress on agent fra-1 during this run',
    ]);
  });
});

describe('auditResultTable of a flow', () => {
  it("lists each step under the cells' table with its median run's INP, TBT, CLS and scores", () => {
    const none = { fcp: null, lcp: null, si: null, tti: null, tbt: null, cls: null, inp: null, performance: null };
    const text = auditResultTable({
      desktop: {
        london: {
          lighthouse: { crux: { url: null }, date: '2026-11-26T10:00:00', elementCount: 80 },
          median: 1,
          locations: ['london'],
          defaultLocation: 'london',
          runs: [],
          steps: [
            {
              name: 'product',
              kind: 'navigate',
              median: 1,
              lighthouse: {},
              runs: [{ ...none, lcp: 812.4, tbt: 0, cls: 0, scores: { performance: 99 } }],
            },
            {
              name: 'add to cart',
              kind: 'timespan',
              median: 2,
              lighthouse: {},
              runs: [
                { ...none, inp: 90, tbt: 40, cls: 0, scores: {} },
                { ...none, inp: 318.2, tbt: 253.7, cls: 0.012, scores: {} },
              ],
            },
            {
              name: 'cart',
              kind: 'snapshot',
              median: 1,
              lighthouse: {},
              runs: [{ ...none, scores: { accessibility: 100, seo: null } }],
            },
          ],
        },
      },
    });
    expect(text).toContain('flow steps (median run of each):');
    expect(text).toMatch(
      /desktop\s+│\s+london\s+│\s+add to cart\s+│\s+timespan\s+│\s+318 ms\s+│\s+254 ms\s+│\s+0\.012\s+│\s+–\s+│\s+–\s+│\s+2 of 2/,
    );
    expect(text).toMatch(/product\s+│\s+navigate\s+│\s+–\s+│\s+0 ms\s+│\s+0\.000\s+│\s+812 ms\s+│\s+performance 99/);
    expect(text).toMatch(/cart\s+│\s+snapshot\s+│.*│\s+accessibility 100\s+│\s+1 of 1/);
  });
});

describe('compareTable', () => {
  it('prints each metric on both sides, the difference, and whether it is beyond noise or why not tested', () => {
    const text = compareTable({
      url: 'https://a.test/',
      from: '2026-11-01T10:00:00',
      to: '2026-11-02T10:00:00',
      cells: [
        {
          device: 'mobile',
          location: 'london',
          metrics: [
            {
              metric: 'lcp',
              from: 1500,
              to: 2400,
              difference: 900,
              significance: { test: 'mann-whitney-u', p: 0.0286, beyondNoise: true, runs: { from: 4, to: 4 } },
            },
            {
              metric: 'performance',
              from: 90,
              to: 88,
              difference: -2,
              significance: { test: 'not enough runs', runs: { from: 2, to: 4 } },
            },
          ],
          audits: [{ id: 'bf-cache', title: 'bfcache', from: 100, to: 0, difference: -100 }],
          opportunities: [],
        },
      ],
      unmatched: [{ device: 'desktop', location: 'tokyo', onlyIn: 'to' }],
    });
    expect(text).toMatch(/lcp\s+│\s+1500 ms\s+│\s+2400 ms\s+│\s+\+900 ms\s+│\s+YES \(p = 0\.029, 4 and 4 runs\)/);
    expect(text).toMatch(/performance\s+│\s+90\s+│\s+88\s+│\s+-2\s+│\s+not enough runs \(2 and 4; 3 a side\)/);
    expect(text).toContain('audit bf-cache: 100 → 0 (-100)');
    expect(text).toContain('desktop/tokyo: only in the second snapshot');
  });
});

import { describe, expect, it } from 'vitest';
import { auditResultTable } from './result-tables.ts';

describe('auditResultTable', () => {
  it('gives a cell that was not measured its own row, with the reason', () => {
    const text = auditResultTable({ missing: [{ device: 'mobile', location: 'tokyo', reason: 'NO_RESPONDERS: no agent serves tokyo' }] });
    const row = text.split('\n').find((line) => line.includes('tokyo'));
    expect(row).toMatch(/mobile\s+│\s+tokyo\s+│\s+not measured: NO_RESPONDERS: no agent serves tokyo/);
  });
  it('says how many runs were suspect and re-tested, and lists each suspect run with its reasons', () => {
    const run = { fcp: 1000, lcp: 1500, si: 1200, tti: 2000, tbt: 100, cls: 0, performance: 90, agentId: 'fra-1' };
    const shared = { ...run, verdict: 'suspect' as const, reasons: ['1 other run was in progress on agent fra-1 during this run'] };
    const text = auditResultTable({
      mobile: {
        frankfurt: {
          lighthouse: { crux: { url: null }, date: '2026-11-23T10:00:00', elementCount: 400 },
          median: 4,
          locations: ['frankfurt'],
          defaultLocation: 'frankfurt',
          runs: [shared, shared, { ...run, verdict: 'reliable', reasons: [], retestOf: 1 }, { ...run, verdict: 'reliable', reasons: [], retestOf: 2 }],
          verification: { reliableRuns: 2, suspectRuns: 2, retests: 2, median: 'reliable' },
        },
      },
    });
    expect(text).toMatch(/frankfurt\s+│.*│\s+4 of 4, 2 suspect, 2 re-tests\s+│/);
    expect(text.split('\n').slice(-2)).toEqual(['mobile/frankfurt run 1 suspect: 1 other run was in progress on agent fra-1 during this run', 'mobile/frankfurt run 2 suspect: 1 other run was in progress on agent fra-1 during this run']);
  });
});

import { describe, expect, it } from 'vitest';
import { auditResultSchema } from '@perfwatch/common';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { toAuditResult } from './audit-view.ts';
import { buildLocationSnapshot } from './snapshot-builder.ts';

describe('toAuditResult', () => {
  const mobileLondon = buildLocationSnapshot('mobile', 'london', [1, 2, 3].map((n, runIndex) => ({ jobId: `j${n}`, agentId: 'a', location: 'london' as const, device: 'mobile' as const, runIndex, startedAt: '', lighthouseMs: 1, lhr: loadLhr('mobile', n as 1 | 2 | 3) })));
  const desktopTokyo = buildLocationSnapshot('desktop', 'tokyo', [{ jobId: 'j', agentId: 'a', location: 'tokyo', device: 'desktop', runIndex: 0, startedAt: '', lighthouseMs: 1, lhr: loadLhr('desktop', 1) }]);
  const date = new Date('2026-01-02T03:04:05Z');

  it('has the shape of the spec: device → location → lighthouse with crux, date and elementCount', () => {
    const view = toAuditResult({ date, available: [mobileLondon, desktopTokyo], results: [mobileLondon, desktopTokyo] }, { defaultLocation: 'london' });
    expect(auditResultSchema.parse(view)).toEqual(view);
    const cell = view.mobile!.london!;
    expect(cell.lighthouse.date).toBe('2026-01-02T03:04:05');
    expect(cell.lighthouse['lighthouseVersion']).toMatch(/^13\./);
    expect(cell.lighthouse.crux).toEqual({ url: null });
    expect(cell.lighthouse.elementCount).toBeGreaterThan(400);
    expect(cell.median).toBe(mobileLondon.median);
    expect(cell.locations).toEqual(['london']);
    expect(cell.defaultLocation).toBe('london');
    expect(view.desktop!.tokyo!.median).toBe(1);
  });

  it('lists every location the snapshot has for the device, even when the read is filtered', () => {
    const view = toAuditResult({ date, available: [mobileLondon, { device: 'mobile', location: 'tokyo' }], results: [mobileLondon] }, { defaultLocation: 'tokyo' });
    expect(Object.keys(view.mobile!)).toEqual(['london']);
    expect(view.mobile!.london!.locations).toEqual(['london', 'tokyo']);
    expect(view.desktop).toBeUndefined();
  });

  it('names the missing cells the read asked about, and has no `missing` key when none is', () => {
    const missing = [
      { device: 'mobile' as const, location: 'tokyo' as const, reason: 'NO_RESPONDERS: no agent serves tokyo' },
      { device: 'desktop' as const, location: 'london' as const, reason: 'TIMEOUT: no reply' },
    ];
    const snapshot = { date, available: [mobileLondon, desktopTokyo], results: [mobileLondon, desktopTokyo], missing };
    const view = toAuditResult(snapshot, { defaultLocation: 'london' });
    expect(auditResultSchema.parse(view).missing).toEqual(missing);
    expect(toAuditResult(snapshot, { defaultLocation: 'london' }, { device: 'mobile' }).missing).toEqual([missing[0]]);
    expect(toAuditResult(snapshot, { defaultLocation: 'london' }, { locations: ['frankfurt'] })).not.toHaveProperty('missing');
    expect(toAuditResult({ ...snapshot, missing: [] }, { defaultLocation: 'london' })).not.toHaveProperty('missing');
  });
  it('says how far the runs are to be trusted: reliable and suspect runs, re-tests, the median\'s verdict', () => {
    const conditions = { benchmarkIndex: 2400, baselineBenchmarkIndex: 2460, cpuMultiplier: 8, concurrentRuns: 0, loadAverage: 0.2, chromeVersion: '142', lighthouseVersion: '13' };
    const runs = [1, 2, 3].map((n, runIndex) => ({ jobId: `j${n}`, agentId: 'a', location: 'london' as const, device: 'mobile' as const, runIndex, startedAt: '', lighthouseMs: 1, lhr: loadLhr('mobile', n as 1 | 2 | 3), conditions: { ...conditions, concurrentRuns: runIndex === 0 ? 1 : 0 } }));
    const retested = buildLocationSnapshot('mobile', 'london', [...runs, { ...runs[1]!, jobId: 'j4', runIndex: 3, conditions, retestOfRunIndex: 0 }]);
    const cell = toAuditResult({ date, available: [retested], results: [retested] }, { defaultLocation: 'london' }).mobile!.london!;
    expect(cell.verification).toEqual({ reliableRuns: 3, suspectRuns: 1, retests: 1, median: 'reliable' });
    expect(cell.runs.map((r) => r.verdict)).toEqual(['suspect', 'reliable', 'reliable', 'reliable']);
    expect(cell.runs[3]!.retestOf).toBe(1);
    // Snapshots stored before verdicts existed say nothing rather than something invented.
    const before = { ...mobileLondon, runs: mobileLondon.runs.map(({ verdict: _v, reasons: _r, ...run }) => run) };
    expect(toAuditResult({ date, available: [before], results: [before] }, { defaultLocation: 'london' }).mobile!.london).not.toHaveProperty('verification');
  });
});

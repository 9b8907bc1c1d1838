import { describe, expect, it } from 'vitest';
import { compareResultSchema, type CompareResult, type Device, type Location, type Revision } from '@perfwatch/common';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { compareSnapshots } from './compare-view.ts';
import { auditsOfResult } from './result-audits.ts';
import { builtCell, CALM_CONDITIONS as calm } from '../../../test/support/new-cells.ts';

/** A cell of real mobile runs of the fixture site, each run's LCP shifted by `lcpShift` ms. */
function cell(
  runs: number,
  {
    lcpShift = 0,
    device = 'mobile',
    location = 'london',
    shared = [] as number[],
    change,
  }: {
    lcpShift?: number;
    device?: Device;
    location?: Location;
    shared?: number[];
    change?: (lhr: ReturnType<typeof loadLhr>) => void;
  } = {},
) {
  return builtCell(
    device,
    location,
    Array.from({ length: runs }, (_, runIndex) => {
      const lhr = loadLhr(device, ((runIndex % 3) + 1) as 1 | 2 | 3);
      lhr.audits['largest-contentful-paint']!.numericValue! += lcpShift + runIndex;
      change?.(lhr);
      return {
        jobId: `j${runIndex}`,
        agentId: 'a',
        location,
        device,
        runIndex,
        startedAt: '',
        lighthouseMs: 1,
        lhr,
        conditions: { ...calm, concurrentRuns: shared.includes(runIndex) ? 1 : 0 },
      };
    }),
  );
}
const at = (iso: string, ...results: Array<Awaited<ReturnType<typeof cell>>>) => ({ date: new Date(iso), results });
type Side = ReturnType<typeof at> & { revision?: Revision };
/** Compared as the route compares, each cell's audits read from its result. */
const compared = (url: string | { url: string; baseUrl?: string }, from: Side, to: Side) =>
  compareSnapshots(typeof url === 'string' ? { url } : url, from, to, (cell) => auditsOfResult(cell.lighthouse));
const metric = (result: CompareResult, name: string) => result.cells[0]!.metrics.find((m) => m.metric === name)!;

describe('compareSnapshots', () => {
  it("gives both median runs' values and their difference, in the documented shape", async () => {
    const from = await cell(3);
    const to = await cell(3, { lcpShift: 900 });
    const result = await compared('https://a.test/', at('2026-11-01T10:00:00Z', from), at('2026-11-02T10:00:00Z', to));
    expect(compareResultSchema.parse(result)).toEqual(result);
    // One project, no revisions: the seed's members only.
    expect(Object.keys(result)).toEqual(['url', 'from', 'to', 'cells', 'unmatched']);
    expect(result).toMatchObject({
      url: 'https://a.test/',
      from: '2026-11-01T10:00:00',
      to: '2026-11-02T10:00:00',
      unmatched: [],
    });
    const lcp = metric(result, 'lcp');
    expect(lcp.from).toBe(from.runs[from.median - 1]!.lcp);
    expect(lcp.to).toBe(to.runs[to.median - 1]!.lcp);
    expect(lcp.difference).toBeCloseTo(lcp.to! - lcp.from!, 6);
  });

  it('tests the runs with the U test: three runs a side never reach 5 %, four can', async () => {
    const three = await compared(
      'u',
      at('2026-11-01T10:00:00Z', await cell(3)),
      at('2026-11-02T10:00:00Z', await cell(3, { lcpShift: 900 })),
    );
    // Every run of one side above every run of the other: the smallest p three runs allow.
    expect(metric(three, 'lcp').significance).toEqual({
      test: 'mann-whitney-u',
      p: 0.1,
      beyondNoise: false,
      runs: { from: 3, to: 3 },
    });
    const four = await compared(
      'u',
      at('2026-11-01T10:00:00Z', await cell(4)),
      at('2026-11-02T10:00:00Z', await cell(4, { lcpShift: 900 })),
    );
    expect(metric(four, 'lcp').significance).toMatchObject({
      test: 'mann-whitney-u',
      beyondNoise: true,
      runs: { from: 4, to: 4 },
    });
    expect((metric(four, 'lcp').significance as { p: number }).p).toBeCloseTo(2 / 70, 12);
  });

  it('says "not enough runs" below three reliable runs a side; suspect runs do not count', async () => {
    const one = await compared(
      'u',
      at('2026-11-01T10:00:00Z', await cell(1)),
      at('2026-11-02T10:00:00Z', await cell(3)),
    );
    expect(metric(one, 'performance').significance).toEqual({ test: 'not enough runs', runs: { from: 1, to: 3 } });
    const shared = await compared(
      'u',
      at('2026-11-01T10:00:00Z', await cell(4, { shared: [0, 1] })),
      at('2026-11-02T10:00:00Z', await cell(4)),
    );
    expect(metric(shared, 'lcp').significance).toEqual({ test: 'not enough runs', runs: { from: 2, to: 4 } });
  });

  it('lists the audits and opportunities that changed most, largest first', async () => {
    const to = await cell(3, {
      change: (lhr) => {
        lhr.audits['bf-cache']!.score = 0;
        lhr.audits['unused-javascript']!.score = 0;
        lhr.audits['unused-javascript']!.metricSavings = { LCP: 1200, FCP: 900 };
      },
    });
    const result = await compared('u', at('2026-11-01T10:00:00Z', await cell(3)), at('2026-11-02T10:00:00Z', to));
    const audits = result.cells[0]!.audits;
    expect(audits.map((a) => a.id)).toContain('bf-cache');
    expect(audits[0]!.difference).toBeLessThan(0);
    for (let i = 1; i < audits.length; i++)
      expect(Math.abs(audits[i]!.difference)).toBeLessThanOrEqual(Math.abs(audits[i - 1]!.difference));
    expect(result.cells[0]!.opportunities[0]).toMatchObject({ id: 'unused-javascript', toMs: 1200 });
    expect(result.cells[0]!.opportunities[0]!.differenceMs).toBe(1200 - result.cells[0]!.opportunities[0]!.fromMs);
  });

  it('names the cells only one snapshot has', async () => {
    const result = await compared(
      'u',
      at('2026-11-01T10:00:00Z', await cell(1), await cell(1, { location: 'tokyo' })),
      at('2026-11-02T10:00:00Z', await cell(1), await cell(1, { device: 'desktop' })),
    );
    expect(result.cells.map((c) => `${c.device}/${c.location}`)).toEqual(['mobile/london']);
    expect(result.unmatched).toEqual([
      { device: 'mobile', location: 'tokyo', onlyIn: 'from' },
      { device: 'desktop', location: 'london', onlyIn: 'to' },
    ]);
  });

  it("names the base project when it is another, and each side's revision when it has one", async () => {
    const [before, after] = [await cell(3), await cell(3, { lcpShift: 900 })];
    const production = { url: 'https://preview-12.shop.test/', baseUrl: 'https://shop.test/' };
    const across = await compared(
      production,
      { ...at('2026-11-01T10:00:00Z', before), revision: { branch: 'main', commit: 'abcdef0' } },
      { ...at('2026-11-02T10:00:00Z', after), revision: { pullRequest: 12 } },
    );
    expect(compareResultSchema.parse(across)).toEqual(across);
    expect(across).toMatchObject({
      ...production,
      fromRevision: { branch: 'main', commit: 'abcdef0' },
      toRevision: { pullRequest: 12 },
    });
    expect(metric(across, 'lcp').difference).toBeGreaterThan(800);
    // The same URL twice is one project: no baseUrl; a side without a revision has none.
    const same = await compared(
      { url: 'https://shop.test/', baseUrl: 'https://shop.test/' },
      at('2026-11-01T10:00:00Z', before),
      { ...at('2026-11-02T10:00:00Z', after), revision: { commit: 'abcdef0' } },
    );
    expect(Object.keys(same)).toEqual(['url', 'from', 'to', 'toRevision', 'cells', 'unmatched']);
  });
});

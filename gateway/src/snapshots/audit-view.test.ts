import { describe, expect, it } from 'vitest';
import { auditResultSchema, type AuditResult } from '@perfwatch/common';
import { loadFlowSteps, loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { setImmediate } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gzipSync } from 'node:zlib';
import { auditResultPieces } from './audit-view.ts';
import { receivedRun } from '../dispatch/run-outcome.ts';
import { ResultBytes } from './result-bytes.ts';
import type { LocationSnapshot, NewLocationSnapshot, SnapshotFilter } from '../store/store.ts';
import { buildLocationSnapshot, NoUsableResult } from '../updates/snapshot-builder.ts';
import { builtCell, CALM_CONDITIONS as conditions, readCell } from '../../../test/support/new-cells.ts';

const mobileLondon = await builtCell(
  'mobile',
  'london',
  [1, 2, 3].map((n, runIndex) => ({
    jobId: `j${n}`,
    agentId: 'a',
    location: 'london' as const,
    device: 'mobile' as const,
    runIndex,
    startedAt: '',
    lighthouseMs: 1,
    lhr: loadLhr('mobile', n as 1 | 2 | 3),
  })),
);
const desktopTokyo = await builtCell('desktop', 'tokyo', [
  {
    jobId: 'j',
    agentId: 'a',
    location: 'tokyo',
    device: 'desktop',
    runIndex: 0,
    startedAt: '',
    lighthouseMs: 1,
    lhr: loadLhr('desktop', 1),
  },
]);
const date = new Date('2026-01-02T03:04:05Z');

/** The answer's pieces as a client reads them: their bytes together, decoded as UTF-8. */
async function text(pieces: AsyncIterable<string | Uint8Array>): Promise<string> {
  const bytes: Uint8Array[] = [];
  for await (const piece of pieces) bytes.push(typeof piece === 'string' ? Buffer.from(piece) : piece);
  return Buffer.concat(bytes).toString('utf8');
}

/** The audit result of cells whose results are objects, as a client reads the answer. */
const auditResult = async (
  snapshot: Parameters<typeof auditResultPieces<LocationSnapshot>>[0],
  project: { defaultLocation: 'london' | 'tokyo' },
  filter: SnapshotFilter = {},
) =>
  JSON.parse(
    await text(auditResultPieces(snapshot, project, (cell) => Buffer.from(JSON.stringify(cell.lighthouse)), filter)),
  ) as AuditResult;

describe('the audit result', () => {
  it('has the shape of the spec: device → location → lighthouse with crux, date and elementCount', async () => {
    const view = await auditResult(
      { date, available: [mobileLondon, desktopTokyo], results: [mobileLondon, desktopTokyo] },
      { defaultLocation: 'london' },
    );
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

  it('lists every location the snapshot has for the device, even when the read is filtered', async () => {
    const view = await auditResult(
      { date, available: [mobileLondon, { device: 'mobile', location: 'tokyo' }], results: [mobileLondon] },
      { defaultLocation: 'tokyo' },
    );
    expect(Object.keys(view.mobile!)).toEqual(['london']);
    expect(view.mobile!.london!.locations).toEqual(['london', 'tokyo']);
    expect(view.desktop).toBeUndefined();
  });

  it('names the missing cells the read asked about, and has no `missing` key when none is', async () => {
    const missing = [
      { device: 'mobile' as const, location: 'tokyo' as const, reason: 'NO_RESPONDERS: no agent serves tokyo' },
      { device: 'desktop' as const, location: 'london' as const, reason: 'TIMEOUT: no reply' },
    ];
    const snapshot = { date, available: [mobileLondon, desktopTokyo], results: [mobileLondon, desktopTokyo], missing };
    const view = await auditResult(snapshot, { defaultLocation: 'london' });
    expect(auditResultSchema.parse(view).missing).toEqual(missing);
    expect((await auditResult(snapshot, { defaultLocation: 'london' }, { device: 'mobile' })).missing).toEqual([
      missing[0],
    ]);
    expect(await auditResult(snapshot, { defaultLocation: 'london' }, { locations: ['frankfurt'] })).not.toHaveProperty(
      'missing',
    );
    expect(await auditResult({ ...snapshot, missing: [] }, { defaultLocation: 'london' })).not.toHaveProperty(
      'missing',
    );
  });
  it("says how far the runs are to be trusted: reliable and suspect runs, re-tests, the median's verdict", async () => {
    const runs = [1, 2, 3].map((n, runIndex) => ({
      jobId: `j${n}`,
      agentId: 'a',
      location: 'london' as const,
      device: 'mobile' as const,
      runIndex,
      startedAt: '',
      lighthouseMs: 1,
      lhr: loadLhr('mobile', n as 1 | 2 | 3),
      conditions: { ...conditions, concurrentRuns: runIndex === 0 ? 1 : 0 },
    }));
    const retested = await builtCell('mobile', 'london', [
      ...runs,
      { ...runs[1]!, jobId: 'j4', runIndex: 3, conditions, retestOfRunIndex: 0 },
    ]);
    const cell = (
      await auditResult({ date, available: [retested], results: [retested] }, { defaultLocation: 'london' })
    ).mobile!.london!;
    expect(cell.verification).toEqual({ reliableRuns: 3, suspectRuns: 1, retests: 1, median: 'reliable' });
    expect(cell.runs.map((r) => r.verdict)).toEqual(['suspect', 'reliable', 'reliable', 'reliable']);
    expect(cell.runs[3]!.retestOf).toBe(1);
    // Snapshots stored before verdicts existed say nothing rather than something invented.
    const before = { ...mobileLondon, runs: mobileLondon.runs.map(({ verdict: _v, reasons: _r, ...run }) => run) };
    expect(
      (await auditResult({ date, available: [before], results: [before] }, { defaultLocation: 'london' })).mobile!
        .london,
    ).not.toHaveProperty('verification');
  });

  it('says once, for the cell, when every run was doubted for its host alone', async () => {
    const slowAndCrowded = { ...conditions, benchmarkIndex: 1100, baselineBenchmarkIndex: 1600, otherCpuShare: 0.5 };
    const runs = [1, 2].map((n, runIndex) => ({
      jobId: `j${n}`,
      agentId: 'london-1',
      location: 'london' as const,
      device: 'mobile' as const,
      runIndex,
      startedAt: '',
      lighthouseMs: 1,
      lhr: loadLhr('mobile', n as 1 | 2),
      conditions: { ...slowAndCrowded, benchmarkIndex: 1100 + runIndex * 100 },
    }));
    const hostBound = await builtCell('mobile', 'london', runs);
    const cell = (
      await auditResult({ date, available: [hostBound], results: [hostBound] }, { defaultLocation: 'london' })
    ).mobile!.london!;
    expect(cell.runs.map((r) => [r.verdict, r.hostOnly])).toEqual([
      ['suspect', true],
      ['suspect', true],
    ]);
    // The median of the runs' drift: 1,100 and 1,200 against 1,600 are 31 % and 25 % slower.
    expect(cell.verification).toEqual({
      reliableRuns: 0,
      suspectRuns: 2,
      retests: 0,
      median: 'suspect',
      host: 'on every run, agent london-1 read the machine 28 % slower than its baseline and gave 50 % of its CPU to other processes (median of the runs); not measured again on the same host',
    });
    // One run doubted for itself too: nothing is said for the cell.
    const mixed = await builtCell('mobile', 'london', [
      runs[0]!,
      { ...runs[1]!, conditions: { ...runs[1]!.conditions, concurrentRuns: 1 } },
    ]);
    const mixedCell = (await auditResult({ date, available: [mixed], results: [mixed] }, { defaultLocation: 'london' }))
      .mobile!.london!;
    expect(mixedCell.verification).not.toHaveProperty('host');
  });
});

const auditResultJson = (
  snapshot: Parameters<typeof auditResultPieces<NewLocationSnapshot>>[0],
  project: { defaultLocation: 'london' },
) => text(auditResultPieces(snapshot, project, (cell) => cell.lighthouse.json()));

describe('auditResultPieces', () => {
  const runs = (bytes: (n: 1 | 2 | 3) => Buffer) =>
    ([1, 2, 3] as const).map((n, runIndex) => {
      const { lighthouse: _whole, ...run } = receivedRun({
        jobId: `j${n}`,
        agentId: 'a',
        location: 'london',
        device: 'mobile',
        runIndex,
        startedAt: '',
        lighthouseMs: 1,
        lhr: loadLhr('mobile', n),
      });
      return { ...run, lighthouse: ResultBytes.fromGzip(bytes(n)) };
    });

  it('writes the representative results as received, and reads as the same cells with their results as objects', async () => {
    const cell = await buildLocationSnapshot(
      'mobile',
      'london',
      runs((n) => gzipSync(JSON.stringify(loadLhr('mobile', n)))),
    );
    const json = await auditResultJson({ date, available: [cell], results: [cell] }, { defaultLocation: 'london' });
    expect(JSON.parse(json)).toEqual(
      await auditResult({ date, available: [cell], results: [await readCell(cell)] }, { defaultLocation: 'london' }),
    );
    // The result's own keys, then the audit result's additions.
    expect(JSON.parse(json).mobile.london.lighthouse).toEqual({
      ...(await cell.lighthouse.read()),
      crux: { url: null },
      date: '2026-01-02T03:04:05',
      elementCount: cell.elementCount,
    });
    expect(auditResultSchema.parse(JSON.parse(json)).mobile!.london!.lighthouse.date).toBe('2026-01-02T03:04:05');
  });

  it("puts each cell's result in its own place, whatever the order of the cells", async () => {
    const gz = runs((n) => gzipSync(JSON.stringify(loadLhr('mobile', n))));
    // Devices interleaved: the view's text groups them, so its order is not the cells' order.
    const cells = [
      await buildLocationSnapshot('mobile', 'london', gz),
      await buildLocationSnapshot('desktop', 'london', gz),
      await buildLocationSnapshot('mobile', 'tokyo', gz),
    ];
    const cellsRead = await Promise.all(cells.map((cell) => readCell(cell)));
    const json = await auditResultJson({ date, available: cells, results: cells }, { defaultLocation: 'london' });
    expect(JSON.parse(json)).toEqual(
      await auditResult({ date, available: cells, results: cellsRead }, { defaultLocation: 'london' }),
    );
  });

  it("never writes an agent's bytes that are not one JSON object: their run is set aside, the median taken again", async () => {
    // What the median run's agent sent tries to close the result and add keys of its own.
    const median = (
      await buildLocationSnapshot(
        'mobile',
        'london',
        runs((n) => gzipSync(JSON.stringify(loadLhr('mobile', n)))),
      )
    ).median;
    const hostile = runs((n) =>
      gzipSync(
        n === median
          ? '{"lighthouseVersion":"13"}},"missing":[{"device":"mobile"'
          : JSON.stringify(loadLhr('mobile', n)),
      ),
    );
    const cell = await buildLocationSnapshot('mobile', 'london', hostile);
    expect(cell.runs).toHaveLength(2);
    const json = await auditResultJson({ date, available: [cell], results: [cell] }, { defaultLocation: 'london' });
    expect(Object.keys(JSON.parse(json))).toEqual(['mobile']);
    // Not one usable result: the cell has none, and says why.
    await expect(
      buildLocationSnapshot(
        'mobile',
        'london',
        runs(() => gzipSync('[1, 2]')),
      ),
    ).rejects.toThrow(/not a JSON object/);
    await expect(
      buildLocationSnapshot(
        'mobile',
        'london',
        runs(() => Buffer.from('plain')),
      ),
    ).rejects.toBeInstanceOf(NoUsableResult);
    // Bytes an answer would pass on that are not UTF-8.
    await expect(
      buildLocationSnapshot(
        'mobile',
        'london',
        runs(() => gzipSync(Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]))),
      ),
    ).rejects.toThrow(/not a JSON object in UTF-8/);
  });

  it("holds one cell's result at a time: the one written is let go before the next is read", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const cells = (['london', 'tokyo', 'frankfurt'] as const).map((location) => ({
      device: 'mobile' as const,
      location,
      crux: { url: null },
      elementCount: null,
      median: 1,
      runs: [],
    }));
    const snapshot = { date, available: cells, results: cells };
    let written: WeakRef<ArrayBufferLike> | undefined;
    const heldWhenRead: boolean[] = [];
    const pieces = auditResultPieces(snapshot, { defaultLocation: 'london' }, async () => {
      // A turn of the event loop first: a WeakRef keeps its target until the current job ends.
      await setImmediate();
      gc();
      heldWhenRead.push(written?.deref() !== undefined);
      // Its own memory (not the pool small buffers share), which any view of it holds.
      const result = Buffer.alloc(64 * 1024, 0x20);
      result.write('{"lighthouseVersion":"13"}');
      written = new WeakRef(result.buffer);
      return result;
    });
    // Read as writeJsonPieces reads: each piece written and dropped.
    let count = 0;
    for await (const _piece of pieces) count++;
    expect(count).toBeGreaterThan(3);
    expect(heldWhenRead).toEqual([false, false, false]);
  });
});

describe("a flow's cell in the audit result", () => {
  /** The fixture flow's runs, "Add to cart" painting after 100, 300 and 200 ms. */
  const flowRuns = () =>
    [100, 300, 200].map((inp, runIndex) => {
      const steps = loadFlowSteps();
      steps[1]!.lhr.audits['interaction-to-next-paint']!.numericValue = inp;
      return receivedRun({
        jobId: `f${runIndex}`,
        agentId: 'a',
        location: 'london',
        device: 'desktop',
        runIndex,
        startedAt: '',
        lighthouseMs: 1,
        lhr: steps[0]!.lhr,
        steps,
        conditions,
      });
    });
  /** Each step's result as the update's answer writes it: the first step's is the cell's. */
  const jsonOf = (cell: NewLocationSnapshot, step?: number) =>
    (step ? cell.steps![step]!.lighthouse : cell.lighthouse).json();

  it("has the flow's steps in order, each with its median run's result spliced in, and still parses", async () => {
    const flow = await buildLocationSnapshot('desktop', 'london', flowRuns());
    const page = await buildLocationSnapshot(
      'mobile',
      'london',
      ([1, 2, 3] as const).map((n, runIndex) =>
        receivedRun({
          jobId: `j${n}`,
          agentId: 'a',
          location: 'london',
          device: 'mobile',
          runIndex,
          startedAt: '',
          lighthouseMs: 1,
          lhr: loadLhr('mobile', n),
        }),
      ),
    );
    const snapshot = { date, available: [page, flow], results: [flow, page] };
    const view = auditResultSchema.parse(
      JSON.parse(await text(auditResultPieces(snapshot, { defaultLocation: 'london' }, jsonOf))),
    );
    const cell = view.desktop!.london!;
    expect(cell.steps!.map((s) => `${s.kind} ${s.name} ${s.median}`)).toEqual([
      `navigate product ${flow.median}`,
      'timespan add to cart 3',
      `snapshot cart ${flow.steps![2]!.median}`,
    ]);
    expect(cell.steps!.map((s) => s.lighthouse['gatherMode'])).toEqual(['navigation', 'timespan', 'snapshot']);
    const { crux: _crux, date: _date, elementCount: _count, ...own } = cell.lighthouse;
    expect(cell.steps![0]!.lighthouse).toEqual(own);
    const inp = (s: (typeof cell.steps & {})[number]) =>
      (s.lighthouse['audits'] as Record<string, { numericValue?: number }>)['interaction-to-next-paint']?.numericValue;
    expect(inp(cell.steps![1]!)).toBe(200);
    expect(cell.steps![1]!.runs.map((run) => run.inp)).toEqual([100, 300, 200]);
    // A page that is no flow has no steps; its result is its own.
    expect(view.mobile!.london!).not.toHaveProperty('steps');
    expect(view.mobile!.london!.lighthouse['finalDisplayedUrl']).toBe(loadLhr('mobile', 1).finalDisplayedUrl);
  });
});

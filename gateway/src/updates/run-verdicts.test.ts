import { describe, expect, it } from 'vitest';
import type { AuditRunResult, RunConditions } from '@perfwatch/common';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { receivedRun } from '../dispatch/run-outcome.ts';
import { judgeRuns, nextRetest, representativeRunIndex, type MeasuredRun } from './run-verdicts.ts';

const calm: RunConditions = {
  benchmarkIndex: 2400,
  baselineBenchmarkIndex: 2460,
  cpuMultiplier: 7.98,
  concurrentRuns: 0,
  overlappingRuns: 0,
  loadAverage: 0.4,
  chromeVersion: '142',
  lighthouseVersion: '13.0.1',
};

/** A real mobile run of the fixture site (1–3), with the conditions and changes a test gives. */
function run(
  n: 1 | 2 | 3,
  {
    runIndex = n - 1,
    conditions = calm,
    agentId = 'a1',
    performance,
    lcp,
    warnings,
    retestOfRunIndex,
  }: {
    runIndex?: number;
    conditions?: Partial<RunConditions> | null;
    agentId?: string;
    performance?: number;
    lcp?: number;
    warnings?: string[];
    retestOfRunIndex?: number;
  } = {},
): MeasuredRun {
  const lhr = loadLhr('mobile', n);
  if (performance !== undefined) lhr.categories['performance']!.score = performance / 100;
  if (lcp !== undefined) lhr.audits['largest-contentful-paint']!.numericValue = lcp;
  if (warnings) lhr['runWarnings'] = warnings;
  const result: AuditRunResult = {
    jobId: `j${runIndex}`,
    agentId,
    location: 'london',
    device: 'mobile',
    runIndex,
    startedAt: '',
    lighthouseMs: 1,
    lhr,
    ...(conditions ? { conditions: { ...calm, ...conditions } } : {}),
  };
  return retestOfRunIndex === undefined ? receivedRun(result) : { ...receivedRun(result), retestOfRunIndex };
}

describe('judgeRuns', () => {
  it('trusts runs made alone, on a machine as fast as its calibration, without warnings, that agree', () => {
    expect(judgeRuns([run(1), run(2), run(3)])).toEqual([1, 2, 3].map(() => ({ verdict: 'reliable', reasons: [] })));
    // An agent before v1.2 says nothing of its conditions: nothing to doubt there.
    expect(judgeRuns([run(1, { conditions: null })])).toEqual([{ verdict: 'reliable', reasons: [] }]);
  });

  it('doubts a run another run shared the agent with, at its start or later', () => {
    const [atStart, later, alone] = judgeRuns([
      run(1, { conditions: { concurrentRuns: 1, overlappingRuns: 1 } }),
      run(2, { conditions: { concurrentRuns: 0, overlappingRuns: 2 } }),
      run(3),
    ]);
    expect(atStart).toEqual({
      verdict: 'suspect',
      reasons: ['1 other run was in progress on agent a1 during this run'],
    });
    expect(later).toEqual({
      verdict: 'suspect',
      reasons: ['2 other runs were in progress on agent a1 during this run'],
    });
    expect(alone!.verdict).toBe('reliable');
  });

  it("doubts a run whose benchmark index is more than 15 % off the agent's baseline, either way", () => {
    const verdicts = judgeRuns([
      run(1, { conditions: { benchmarkIndex: 2000, baselineBenchmarkIndex: 2460 } }),
      run(2, { conditions: { benchmarkIndex: 2900, baselineBenchmarkIndex: 2460 } }),
      run(3, { conditions: { benchmarkIndex: 2150, baselineBenchmarkIndex: 2460 } }),
    ]);
    expect(verdicts[0]).toEqual({
      verdict: 'suspect',
      reasons: ["benchmark index 2000 is 19 % below the agent's baseline 2460"],
      hostOnly: true,
    });
    expect(verdicts[1]).toEqual({
      verdict: 'suspect',
      reasons: ["benchmark index 2900 is 18 % above the agent's baseline 2460"],
      hostOnly: true,
    });
    expect(verdicts[2]!.verdict).toBe('reliable'); // 13 % off
    // An agent whose own lone readings spread by 8 % (a robust standard deviation) is allowed
    // three of them: 24 %, so 19 % below is no doubt there; 30 % below still is. No spread is
    // ever allowed more than 40 %.
    const spread = (benchmarkIndex: number, benchmarkSpread: number) =>
      judgeRuns([run(1, { conditions: { benchmarkIndex, baselineBenchmarkIndex: 2460, benchmarkSpread } })])[0]!
        .verdict;
    expect(spread(2000, 0.08)).toBe('reliable');
    expect(spread(1720, 0.08)).toBe('suspect');
    expect(spread(1400, 0.5)).toBe('suspect');
    // Without a baseline (the agent could not calibrate) there is nothing to compare with.
    expect(judgeRuns([run(1, { conditions: { benchmarkIndex: 500, baselineBenchmarkIndex: null } })])[0]!.verdict).toBe(
      'reliable',
    );
  });

  it('doubts a run whose host gave more than a quarter of its CPU to other processes', () => {
    const [busy, calm, unknown] = judgeRuns([
      run(1, { conditions: { otherCpuShare: 0.55 } }),
      run(2, { conditions: { otherCpuShare: 0.04 } }),
      run(3, { conditions: { otherCpuShare: null } }),
    ]);
    expect(busy).toEqual({
      verdict: 'suspect',
      reasons: ["other processes took 55 % of the host's CPU during this run"],
      hostOnly: true,
    });
    expect(calm!.verdict).toBe('reliable');
    expect(unknown!.verdict).toBe('reliable');
    // A run doubted for the host and for itself is not the host's alone.
    const [both] = judgeRuns([run(1, { conditions: { otherCpuShare: 0.55, concurrentRuns: 1, overlappingRuns: 1 } })]);
    expect(both!.hostOnly).toBeUndefined();
    expect(both!.reasons).toHaveLength(2);
  });

  it("doubts a run Lighthouse warned about, but not for a redirect or perfwatch's own note", () => {
    const [slow, redirected] = judgeRuns([
      run(1, { warnings: ['The page loaded too slowly to finish within the time limit. Results may be incomplete.'] }),
      run(2, {
        warnings: [
          'The page may not be loading as expected because your test URL (http://a.test/) was redirected to https://a.test/. Try testing the second URL directly.',
          'perfwatch: this result was shrunk to fit the message size limit; details dropped from: none',
        ],
      }),
    ]);
    expect(slow).toEqual({
      verdict: 'suspect',
      reasons: [
        'Lighthouse warned: The page loaded too slowly to finish within the time limit. Results may be incomplete.',
      ],
    });
    expect(redirected).toEqual({ verdict: 'reliable', reasons: [] });
    // Reasons stay bounded whatever a page makes Lighthouse say.
    const [noisy] = judgeRuns([run(1, { warnings: Array.from({ length: 50 }, () => 'x'.repeat(5_000)) })]);
    expect(noisy!.reasons).toHaveLength(3);
    expect(Math.max(...noisy!.reasons.map((r) => r.length))).toBeLessThanOrEqual(300);
  });

  it("doubts a run whose score is more than 10 points, or whose LCP is more than 25 % and 250 ms, from the runs' median", () => {
    const byScore = judgeRuns([run(1, { performance: 95 }), run(2, { performance: 96 }), run(3, { performance: 84 })]);
    expect(byScore.map((v) => v.verdict)).toEqual(['reliable', 'reliable', 'suspect']);
    expect(byScore[2]!.reasons).toEqual(["performance score 84 is 11 points from the runs' median 95"]);
    expect(
      judgeRuns([run(1, { performance: 95 }), run(2, { performance: 96 }), run(3, { performance: 85 })])[2]!.verdict,
    ).toBe('reliable');

    const byLcp = judgeRuns([run(1, { lcp: 1280 }), run(2, { lcp: 1300 }), run(3, { lcp: 2000 })]);
    expect(byLcp[2]).toEqual({ verdict: 'suspect', reasons: ["LCP 2000 ms is 54 % from the runs' median 1300 ms"] });
    // 60 % off but only 180 ms: a fast page's LCP jitters by that much.
    expect(judgeRuns([run(1, { lcp: 300 }), run(2, { lcp: 320 }), run(3, { lcp: 500 })])[2]!.verdict).toBe('reliable');
    // A run doubted for its own reasons is left out of the median the others are compared with:
    // here the three calm runs agree, and the shared one is suspect for sharing, not as an outlier.
    const mixed = judgeRuns([
      run(1, { lcp: 3000, conditions: { concurrentRuns: 1 } }),
      run(2, { lcp: 3100, conditions: { concurrentRuns: 1 } }),
      run(3, { lcp: 1280 }),
      run(1, { lcp: 1300, runIndex: 3 }),
      run(2, { lcp: 1320, runIndex: 4 }),
    ]);
    expect(mixed.map((v) => v.verdict)).toEqual(['suspect', 'suspect', 'reliable', 'reliable', 'reliable']);
    expect(mixed[0]!.reasons).toEqual(['1 other run was in progress on agent a1 during this run']);
    // Two runs have no median to stand apart from.
    expect(judgeRuns([run(1, { performance: 95 }), run(2, { performance: 40 })]).map((v) => v.verdict)).toEqual([
      'reliable',
      'reliable',
    ]);
  });
});

describe('representativeRunIndex', () => {
  const metrics = (fcp: number, tti: number, verdict?: 'reliable' | 'suspect') => ({
    fcp,
    tti,
    ...(verdict ? { verdict } : {}),
  });

  it('takes the median among the reliable runs only', () => {
    // Over all five the median is the run at index 2; over the reliable three it is index 3.
    const runs = [
      metrics(1000, 3000, 'suspect'),
      metrics(1100, 3100, 'suspect'),
      metrics(1200, 3200, 'reliable'),
      metrics(1300, 3300, 'reliable'),
      metrics(1400, 3400, 'reliable'),
    ];
    expect(representativeRunIndex(runs)).toBe(3);
  });

  it("falls back to all runs when none is reliable, and is Lighthouse's median when all are", () => {
    const runs = [metrics(1000, 3000, 'suspect'), metrics(1100, 3100, 'suspect'), metrics(1500, 3500, 'suspect')];
    expect(representativeRunIndex(runs)).toBe(1);
    expect(representativeRunIndex(runs.map(({ fcp, tti }) => metrics(fcp, tti)))).toBe(1);
  });
});

describe('nextRetest', () => {
  const shared = { conditions: { concurrentRuns: 1, overlappingRuns: 1 } };

  it('picks the first suspect run no reliable re-test stands in for yet', () => {
    const first = [run(1, shared), run(2), run(3, shared)];
    expect(nextRetest(first)?.runIndex).toBe(0);
    const afterOne = [...first, run(2, { runIndex: 3, retestOfRunIndex: 0 })];
    expect(nextRetest(afterOne)?.runIndex).toBe(2);
    expect(nextRetest([...afterOne, run(1, { runIndex: 4, retestOfRunIndex: 2 })])).toBeNull();
  });

  it('measures a run again when its re-test was suspect too, and never re-tests a re-test', () => {
    const runs = [run(1, shared), run(2), run(3), run(1, { runIndex: 3, retestOfRunIndex: 0, ...shared })];
    expect(nextRetest(runs)?.runIndex).toBe(0);
    expect(nextRetest([run(1), run(2), run(3)])).toBeNull();
  });

  it("re-tests no run doubted only for its agent's host, nor a run whose re-test met such a host", () => {
    const slowHost = { conditions: { benchmarkIndex: 1100, baselineBenchmarkIndex: 1619 } };
    const busyHost = { conditions: { otherCpuShare: 0.6 } };
    expect(nextRetest([run(1, slowHost), run(2, busyHost), run(3, slowHost)])).toBeNull();
    const retestOnBusyHost = [
      run(1, shared),
      run(2),
      run(3),
      run(1, { runIndex: 3, retestOfRunIndex: 0, ...busyHost }),
    ];
    expect(nextRetest(retestOnBusyHost)).toBeNull();
    // A run shared with another is still measured again, whatever else its host showed.
    const sharedOnBusyHost = { conditions: { ...shared.conditions, otherCpuShare: 0.6 } };
    expect(nextRetest([run(1, sharedOnBusyHost), run(2)])?.runIndex).toBe(0);
  });
});

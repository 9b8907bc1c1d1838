import { describe, expect, it, vi } from 'vitest';
import { gzipSync } from 'node:zlib';
import { digestRun, type AuditRunResult, type RunVerdict } from '@perfwatch/common';
import { loadFlowSteps } from '../../../test/support/lhr-fixtures.ts';
import { CALM_CONDITIONS } from '../../../test/support/new-cells.ts';
import { receivedRun, type ReceivedStep } from '../dispatch/run-outcome.ts';
import { ResultBytes } from '../snapshots/result-bytes.ts';
import { buildFlowSteps, NoUsableStep, type StepSource } from './flow-steps.ts';
import { buildLocationSnapshot, NoUsableResult } from './snapshot-builder.ts';

// A flow's cell chooses a run per step: the real flow of the fixture site (product, add to cart,
// cart), its timespan's INP set per run, as runs whose "Add to cart" handler took longer or not.

const INP = 'interaction-to-next-paint';

/** The fixture's steps with the timespan's INP set, as an agent's run sends them. */
function flowRun(inp: number): ReceivedStep[] {
  return loadFlowSteps().map(({ lhr, ...step }) => {
    if (step.kind === 'timespan') lhr.audits[INP]!.numericValue = inp;
    return { ...step, digest: digestRun(lhr), lighthouse: ResultBytes.fromResult(lhr) };
  });
}

const runs = (inps: readonly number[], verdicts: ReadonlyArray<RunVerdict | undefined> = []): StepSource[] =>
  inps.map((inp, i) => ({ steps: flowRun(inp), verdict: verdicts[i] }));

/** Bytes an agent could send for a step that are gzip but not one JSON object. */
const badBytes = () => ResultBytes.fromGzip(gzipSync(Buffer.from('[1, 2, 3]')));

/** The runs with one step's result in the given runs replaced by bytes that do not hold together. */
function withBadStep(sources: StepSource[], step: number, badRuns: readonly number[]): StepSource[] {
  return sources.map((source, i) =>
    badRuns.includes(i)
      ? { ...source, steps: source.steps.map((s, j) => (j === step ? { ...s, lighthouse: badBytes() } : s)) }
      : source,
  );
}

const timespanOf = (steps: ReturnType<typeof buildFlowSteps>) => steps.find((s) => s.kind === 'timespan')!;

describe("a flow's steps", () => {
  it('stands each timespan for the run of median INP, and keeps every run’s numbers', () => {
    const steps = buildFlowSteps(runs([100, 300, 200]), 0);
    expect(steps.map((s) => `${s.kind} ${s.name}`)).toEqual([
      'navigate product',
      'timespan add to cart',
      'snapshot cart',
    ]);
    const timespan = timespanOf(steps);
    expect(timespan.runs.map((run) => run.inp)).toEqual([100, 300, 200]);
    expect(timespan.median).toBe(3);
    expect(timespan.lighthouse.read().audits[INP]!.numericValue).toBe(200);
    // What a step budget checks: the median run's numbers.
    expect(timespan.measured.audits[INP]!.numericValue).toBe(200);
    expect(timespan.kpis.length).toBeGreaterThan(0);
    // A navigation's step has no interaction; a snapshot's has its category scores.
    expect(steps[0]!.runs[0]!.inp).toBeNull();
    expect(steps[0]!.runs[0]!.fcp).toBeGreaterThan(0);
    expect(steps[2]!.runs[0]!.scores['accessibility']).toBeGreaterThan(0);
  });

  it("gives the first step the cell's median run: its result is the cell's", () => {
    for (const cellMedian of [0, 1, 2])
      expect(buildFlowSteps(runs([100, 300, 200]), cellMedian)[0]!.median).toBe(cellMedian + 1);
  });

  it('passes over suspect runs unless none is reliable', () => {
    // Run 3 (INP 200) doubted: of 100 and 300 the lower middle stands, a median run being a run.
    const oneSuspect = timespanOf(buildFlowSteps(runs([100, 300, 200], ['reliable', 'reliable', 'suspect']), 0));
    expect(oneSuspect.median).toBe(1);
    expect(oneSuspect.runs.map((run) => run.verdict)).toEqual(['reliable', 'reliable', 'suspect']);
    const twoSuspect = timespanOf(buildFlowSteps(runs([100, 300, 200], ['suspect', 'reliable', 'suspect']), 1));
    expect(twoSuspect.median).toBe(2);
    const allSuspect = timespanOf(buildFlowSteps(runs([100, 300, 200], ['suspect', 'suspect', 'suspect']), 0));
    expect(allSuspect.median).toBe(3);
  });

  it('passes over a run whose step result does not hold together, for that step only', () => {
    const steps = buildFlowSteps(withBadStep(runs([100, 300, 200]), 1, [2]), 2);
    const timespan = timespanOf(steps);
    expect(timespan.median).toBe(1);
    expect(timespan.lighthouse.read().audits[INP]!.numericValue).toBe(100);
    // Its numbers, from the digest, are still shown; the other steps keep the run.
    expect(timespan.runs.map((run) => run.inp)).toEqual([100, 300, 200]);
    expect(steps[0]!.median).toBe(3);
  });

  it("takes the first step's result as the cell's, checked with it, without inflating it again", () => {
    const sources = runs([100, 300, 200]);
    const checked = sources.map((source) => source.steps.map((step) => vi.spyOn(step.lighthouse, 'check')));
    buildFlowSteps(sources, 1);
    expect(checked[1]![0]).not.toHaveBeenCalled();
    expect(checked[2]![1]).toHaveBeenCalledOnce();
  });

  it('refuses a step whose every run sent bytes that do not hold together, naming the step and the runs', () => {
    const build = () => buildFlowSteps(withBadStep(runs([100, 300, 200]), 2, [0, 1, 2]), 0);
    expect(build).toThrow(NoUsableStep);
    expect(build).toThrow(/^no run's result for step "cart" could be read: run \d: .*; run \d: .*; run \d: /);
  });
});

describe("a flow's cell", () => {
  /** A run of the flow as the update service holds it, with its conditions. */
  const measuredRun = (inp: number, runIndex: number, concurrentRuns = 0) => {
    const [first, ...rest] = loadFlowSteps();
    const steps = [first!, ...rest].map((step) => {
      if (step.kind === 'timespan') step.lhr.audits[INP]!.numericValue = inp;
      return step;
    });
    const run: AuditRunResult = {
      jobId: `j${runIndex}`,
      agentId: 'a',
      location: 'london',
      device: 'desktop',
      runIndex,
      startedAt: '2026-01-02T03:04:05.000Z',
      lighthouseMs: 1,
      lhr: first!.lhr,
      steps,
      conditions: { ...CALM_CONDITIONS, concurrentRuns },
    };
    return receivedRun(run);
  };

  it('has its steps, the first standing for the cell, the timespan for the run of median INP', async () => {
    const cell = await buildLocationSnapshot('desktop', 'london', [
      measuredRun(100, 0),
      measuredRun(300, 1),
      measuredRun(200, 2),
    ]);
    expect(cell.steps!.map((s) => `${s.kind} ${s.name}`)).toEqual([
      'navigate product',
      'timespan add to cart',
      'snapshot cart',
    ]);
    expect(cell.steps![0]!.median).toBe(cell.median);
    expect(cell.steps![0]!.lighthouse.read()).toEqual(cell.lighthouse.read());
    expect(cell.steps![1]!.median).toBe(3);
    expect(cell.steps![1]!.runs.map((run) => [run.inp, run.verdict])).toEqual([
      [100, 'reliable'],
      [300, 'reliable'],
      [200, 'reliable'],
    ]);
  });

  it("takes the run's verdict for its steps: a run measured beside another is passed over", async () => {
    const cell = await buildLocationSnapshot('desktop', 'london', [
      measuredRun(100, 0),
      measuredRun(300, 1),
      measuredRun(200, 2, 1),
    ]);
    expect(cell.steps![1]!.runs.map((run) => run.verdict)).toEqual(['reliable', 'reliable', 'suspect']);
    expect(cell.steps![1]!.median).toBe(1);
  });

  it('has none when a step cannot be read from any run', async () => {
    const built = [measuredRun(100, 0), measuredRun(300, 1)].map((run) => ({
      ...run,
      steps: run.steps!.map((step, i) => (i === 1 ? { ...step, lighthouse: badBytes() } : step)),
    }));
    await expect(buildLocationSnapshot('desktop', 'london', built)).rejects.toThrow(NoUsableResult);
    await expect(buildLocationSnapshot('desktop', 'london', built)).rejects.toThrow(/step "add to cart"/);
  });

  it('has no steps for a navigation', async () => {
    const { steps: _steps, ...navigation } = measuredRun(100, 0);
    expect(await buildLocationSnapshot('desktop', 'london', [navigation])).not.toHaveProperty('steps');
  });
});

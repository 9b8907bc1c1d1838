import {
  digestKpis,
  digestSkeleton,
  lighthouseKpis,
  pageSourceKpis,
  savingsKpis,
  stepRunSummary,
  type CellStep,
  type KpiRecord,
  type LighthouseResult,
  type RunVerdict,
  type StepRunSummary,
} from '@perfwatch/common';
import type { ReceivedStep } from '../dispatch/run-outcome.ts';
import { BadResultBytes, type ResultBytes } from '../snapshots/result-bytes.ts';
import { representativeRunIndex } from './run-verdicts.ts';

/** A flow step of a cell being written: its summary, its median run's result as received, and what is read of it. */
export interface NewCellStep extends CellStep {
  lighthouse: ResultBytes;
  /** The median run's numbers for the step (its digest's skeleton): what step budgets check. */
  measured: LighthouseResult;
  kpis: KpiRecord[];
}

/** A flow's run as the steps are built from it: its steps, and the run's verdict. */
export interface StepSource {
  steps: readonly ReceivedStep[];
  verdict: RunVerdict | undefined;
}

/** A step whose every candidate run sent a result that does not hold together. */
export class NoUsableStep extends Error {
  constructor(step: string, reasons: readonly string[]) {
    super(`no run's result for step "${step}" could be read: ${reasons.join('; ')}`.slice(0, 2_000));
    this.name = 'NoUsableStep';
  }
}

/**
 * The steps of a flow's cell from its runs (in the cell's run order): each step's numbers in
 * every run, and its median run, chosen among the runs judged reliable (all of them when none
 * is) by the step's own measure. The first step's median is the cell's own (`cellMedian`, 0-based):
 * a navigation is chosen as a cell is, and its result is the cell's, which the caller has checked.
 */
export function buildFlowSteps(runs: readonly StepSource[], cellMedian: number): NewCellStep[] {
  const names = runs[0]!.steps;
  return names.map(({ name, kind }, index) => {
    const summaries = runs.map((run) => ({
      ...stepRunSummary(digestSkeleton(run.steps[index]!.digest)),
      ...(run.verdict ? { verdict: run.verdict } : {}),
    }));
    const excluded = new Set<number>();
    const unusable: string[] = [];
    for (;;) {
      const cells = index === 0 && excluded.size === 0;
      const median = cells ? cellMedian : stepMedian(kind, summaries, excluded);
      if (median === null) throw new NoUsableStep(name, unusable);
      const step = runs[median]!.steps[index]!;
      try {
        // The cell's result, the same bytes: checking them again inflated them a second time, and
        // left them in the inflated results' cache, where nothing reads them (answers read the cell's).
        if (!cells) step.lighthouse.check();
      } catch (error) {
        if (!(error instanceof BadResultBytes)) throw error;
        unusable.push(`run ${median + 1}: ${error.message}`);
        excluded.add(median);
        continue;
      }
      return {
        name,
        kind,
        median: median + 1,
        runs: summaries,
        lighthouse: step.lighthouse,
        measured: digestSkeleton(step.digest),
        kpis: stepKpis(step),
      };
    }
  });
}

/**
 * The run (0-based) that stands for a step, among those not `excluded`: a navigation as a cell's
 * (Lighthouse's median run, reliable runs first); a timespan the median by INP (by TBT where no
 * run has an interaction); a snapshot the median by its category scores summed. Null: no run left.
 */
function stepMedian(
  kind: CellStep['kind'],
  runs: readonly StepRunSummary[],
  excluded: ReadonlySet<number>,
): number | null {
  const left = runs.map((run, index) => ({ run, index })).filter(({ index }) => !excluded.has(index));
  if (left.length === 0) return null;
  if (kind === 'navigate') return left[representativeRunIndex(left.map(({ run }) => run))]!.index;
  const reliable = left.filter(({ run }) => run.verdict !== 'suspect');
  const candidates = reliable.length > 0 ? reliable : left;
  const measure =
    kind === 'timespan'
      ? (run: StepRunSummary) => (runs.some((r) => r.inp !== null) ? run.inp : run.tbt)
      : (run: StepRunSummary) => Object.values(run.scores).reduce<number>((sum, score) => sum + (score ?? 0), 0);
  // Runs without the number go last; the lower middle of an even count, as a median run must be a run.
  const ordered = [...candidates].sort((a, b) => (measure(a.run) ?? Infinity) - (measure(b.run) ?? Infinity));
  return ordered[Math.floor((ordered.length - 1) / 2)]!.index;
}

/** A step's KPI records: the agent's, taken with this gateway's definitions, or taken here from its result. */
function stepKpis(step: ReceivedStep): KpiRecord[] {
  const sent = digestKpis(step.digest);
  if (sent) return sent;
  const lhr = step.lighthouse.read();
  return [...lighthouseKpis(lhr), ...pageSourceKpis(lhr), ...savingsKpis(lhr)];
}

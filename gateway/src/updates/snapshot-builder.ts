import {
  cruxKpis,
  digestKpis,
  digestSkeleton,
  extractRunMetrics,
  lighthouseKpis,
  pageSourceKpis,
  savingsKpis,
  securityKpis,
  type Device,
  type KpiRecord,
  type Location,
  type RunVerdict,
} from '@perfwatch/common';
import type { FieldData } from '../snapshots/crux/crux-client.ts';
import { BadResultBytes } from '../snapshots/result-bytes.ts';
import type { RunOutcome } from '../dispatch/run-outcome.ts';
import { judgeRuns, representativeRunIndex, type MeasuredRun } from './run-verdicts.ts';
import { buildFlowSteps, NoUsableStep } from './flow-steps.ts';
import type { NewLocationSnapshot } from '../store/store.ts';

/** A cell whose every successful run sent a result that does not hold together. */
export class NoUsableResult extends Error {
  constructor(reasons: readonly string[]) {
    super(`no run's result could be read: ${reasons.join('; ')}`.slice(0, 2_000));
    this.name = 'NoUsableResult';
  }
}

/**
 * Turns the successful runs of one (device, location) into its snapshot entry: every run's
 * key metrics, conditions and verdict (from the runs' digests), the representative run's
 * result as received, and the KPI records taken from it. Only the representative result is
 * inflated, to check it is one JSON object before it is stored; should it not be, its run is
 * set aside (the agent sent something else than its digest promised) and the choice made again.
 */
export async function buildLocationSnapshot(
  device: Device,
  location: Location,
  successes: readonly MeasuredRun[],
): Promise<NewLocationSnapshot> {
  return (await buildCell(device, location, successes)).cell;
}

/** The representative run of a cell: where its artifacts are (the agent that made it keeps them by job). */
export type RepresentativeRun = Pick<MeasuredRun, 'jobId' | 'agentId'>;

async function buildCell(
  device: Device,
  location: Location,
  successes: readonly MeasuredRun[],
): Promise<{ cell: NewLocationSnapshot; representative: RepresentativeRun }> {
  if (successes.length === 0) throw new Error(`no successful run for ${device}/${location}`);
  // Re-tests have run indexes past the first round's, so they come after the runs they re-test.
  let ordered = [...successes].sort((a, b) => a.runIndex - b.runIndex);
  const unusable: string[] = [];
  for (;;) {
    if (ordered.length === 0) throw new NoUsableResult(unusable);
    const verdicts = judgeRuns(ordered);
    const runs = ordered.map((r, i) => {
      const target =
        r.retestOfRunIndex === undefined ? -1 : ordered.findIndex((o) => o.runIndex === r.retestOfRunIndex);
      return {
        ...extractRunMetrics(digestSkeleton(r.digest)),
        agentId: r.agentId,
        ...(r.conditions ?? {}),
        ...verdicts[i]!,
        ...(target >= 0 ? { retestOf: target + 1 } : {}),
      };
    });
    const index = representativeRunIndex(runs);
    const representative = ordered[index]!;
    try {
      representative.lighthouse.check();
    } catch (error) {
      if (!(error instanceof BadResultBytes)) throw error;
      unusable.push(`run ${representative.runIndex} of agent ${representative.agentId}: ${error.message}`);
      ordered = ordered.filter((r) => r !== representative);
      continue;
    }
    const steps = flowSteps(ordered, runs, index);
    const security = representative.security ?? ordered.find((r) => r.security)?.security;
    const cell: NewLocationSnapshot = {
      device,
      location,
      median: index + 1,
      runs,
      lighthouse: representative.lighthouse,
      lighthouseVersion: representative.digest.lhr.lighthouseVersion,
      measured: digestSkeleton(representative.digest),
      // Field data arrives with the agent's CrUX client; until then there is none to show.
      crux: { url: null },
      elementCount: representative.digest.elementCount,
      kpis: [...(await resultKpis(representative)), ...(security ? securityKpis(security) : [])],
      ...(steps ? { steps } : {}),
    };
    return { cell, representative: { jobId: representative.jobId, agentId: representative.agentId } };
  }
}

/**
 * A flow's steps (flow-steps.ts) from the cell's runs, or undefined for a navigation's cell. The
 * reply of every run was checked against the job's flow: a run without steps is not one of it.
 */
function flowSteps(ordered: readonly MeasuredRun[], runs: ReadonlyArray<{ verdict?: RunVerdict }>, median: number) {
  if (!ordered[0]!.steps) return undefined;
  try {
    return buildFlowSteps(
      ordered.map((run, i) => ({ steps: run.steps ?? [], verdict: runs[i]!.verdict })),
      median,
    );
  } catch (error) {
    if (error instanceof NoUsableStep) throw new NoUsableResult([error.message]);
    throw error;
  }
}

/**
 * The representative run's KPI records: the agent's, taken with this gateway's definitions,
 * or, from an agent of other definitions, taken here from its result.
 */
async function resultKpis(run: MeasuredRun): Promise<KpiRecord[]> {
  const sent = digestKpis(run.digest);
  if (sent) return sent;
  const lhr = run.lighthouse.read();
  return [...lighthouseKpis(lhr), ...pageSourceKpis(lhr), ...savingsKpis(lhr)];
}

/**
 * Adds CrUX field data to a snapshot entry: the records under `crux`, and the CRUX KPI records
 * (the Core Web Vitals assessment of the page and of its origin). Without field data (CrUX not
 * configured, or not reachable) nothing is added: no assessment is ever invented.
 */
export function withFieldData(entry: NewLocationSnapshot, fieldData: FieldData | null): NewLocationSnapshot {
  if (!fieldData) return entry;
  return {
    ...entry,
    crux: { url: fieldData.url, ...(fieldData.origin ? { origin: fieldData.origin } : {}) },
    kpis: [...entry.kpis, ...cruxKpis(fieldData.url, fieldData.origin)],
  };
}

/** A successful run as verdicts and the snapshot take it: its result, and which run it re-tests. */
export function measured(outcome: Extract<RunOutcome, { ok: true }> & { retestOfRunIndex?: number }): MeasuredRun {
  return outcome.retestOfRunIndex === undefined
    ? outcome.result
    : { ...outcome.result, retestOfRunIndex: outcome.retestOfRunIndex };
}

/** A cell's snapshot entry from its runs, or why it has none; and its failed runs. */
export async function cellFromRuns(
  device: Device,
  location: Location,
  runs: ReadonlyArray<RunOutcome & { retestOfRunIndex?: number }>,
): Promise<{
  cell?: NewLocationSnapshot;
  representative?: RepresentativeRun;
  reason?: string;
  failures: Array<Extract<RunOutcome, { ok: false }>>;
}> {
  const successes: MeasuredRun[] = [];
  const failures: Array<Extract<RunOutcome, { ok: false }>> = [];
  for (const outcome of runs) {
    if (outcome.ok) successes.push(measured(outcome));
    else failures.push(outcome);
  }
  const reasonOf = (failure: Extract<RunOutcome, { ok: false }>) =>
    `${failure.error.code}: ${failure.error.message}`.slice(0, 2_000);
  if (successes.length === 0) return { reason: reasonOf(failures.at(-1)!), failures };
  try {
    return { ...(await buildCell(device, location, successes)), failures };
  } catch (error) {
    if (!(error instanceof NoUsableResult)) throw error;
    const unusable = { ok: false as const, error: { code: 'BAD_REPLY' as const, message: error.message } };
    return { reason: reasonOf(unusable), failures: [...failures, unusable] };
  }
}

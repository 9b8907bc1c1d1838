import {
  checkCell,
  checkId,
  type AlertState,
  type BudgetCheck,
  type Budgets,
  type CellCheck,
  type Device,
  type LighthouseResult,
  type Location,
  type MeasuredSteps,
  digestSkeleton,
  stepSkeleton,
} from '@perfwatch/common';
import type { Logger } from 'pino';
import type { RunOutcome } from '../dispatch/run-outcome.ts';
import type { NewLocationSnapshot, ProjectRecord, SnapshotReadsStore } from '../store/store.ts';

/**
 * Alerts without noise (docs/cli-and-budgets.md, "The alert rule"). Every check of a (project, device, location) has a
 * state, passing or failing, carried from snapshot to snapshot with the checks themselves. An
 * event is a change of state: a failure of a passing check is measured once more (the
 * confirmation run) and becomes `budget.failed` only when that run fails the check too; a
 * failing check that passes again is `budget.recovered` at once (a false recovery costs a
 * message, a false failure wakes someone up).
 */

/** What a cell's previous snapshot says: its result (regressions compare with it) and each check's state. */
export interface PriorCell {
  lighthouse: LighthouseResult;
  /** A flow's steps, each as its median run's numbers (stepSkeleton). */
  steps?: MeasuredSteps;
  states: ReadonlyMap<string, AlertState>;
}

const stateOf = (states: ReadonlyMap<string, AlertState> | undefined, check: BudgetCheck): AlertState =>
  states?.get(checkId(check)) ?? 'passing';

/** Whether a cell's checks need the confirmation run: a check fails whose state is passing. */
export function needsConfirmation(checks: readonly BudgetCheck[], prior: PriorCell | undefined): boolean {
  return checks.some((check) => !check.pass && stateOf(prior?.states, check) === 'passing');
}

/** A cell's checks against the budgets and, given its previous result, the allowed regressions; a flow's by step too. */
function checksOf(
  lighthouse: LighthouseResult,
  steps: MeasuredSteps | undefined,
  budgets: Budgets,
  prior: PriorCell | undefined,
): BudgetCheck[] {
  return checkCell(lighthouse, budgets, prior?.lighthouse, { current: steps, previous: prior?.steps });
}

/**
 * The checks as stored: each with the state it leaves and the event it announces. `confirmation`
 * is the confirmation run's checks, null when that run produced no result, undefined when none
 * was run (no failure needed one).
 */
export function settleChecks(
  checks: readonly BudgetCheck[],
  prior: PriorCell | undefined,
  confirmation?: readonly BudgetCheck[] | null,
): CellCheck[] {
  return checks.map((check): CellCheck => {
    const was = stateOf(prior?.states, check);
    if (check.pass)
      return was === 'failing'
        ? { ...check, state: 'passing', event: 'budget.recovered' }
        : { ...check, state: 'passing' };
    if (was === 'failing') return { ...check, state: 'failing' };
    if (confirmation === null) return { ...check, state: 'passing', confirmation: null };
    const again = confirmation?.find((c) => checkId(c) === checkId(check));
    if (!again) return { ...check, state: 'passing' };
    const confirmed = { actual: again.actual, pass: again.pass };
    return again.pass
      ? { ...check, state: 'passing', confirmation: confirmed }
      : { ...check, state: 'failing', confirmation: confirmed, event: 'budget.failed' };
  });
}

/** How far back a cell's previous snapshot is looked for: a location away for a while still finds its last one. */
const PRIOR_SNAPSHOTS = 20;

/**
 * Each cell's previous snapshot: the newest of the project's recent snapshots that has the cell.
 * Read before the update stores its own.
 */
async function readPriorCells(
  store: Pick<SnapshotReadsStore, 'listSnapshots' | 'findSnapshot'>,
  project: ProjectRecord,
  cells: ReadonlyArray<{ device: Device; location: Location }>,
): Promise<Map<string, PriorCell>> {
  const recent = await store.listSnapshots(project.id, { limit: PRIOR_SNAPSHOTS });
  const prior = new Map<string, PriorCell>();
  await Promise.all(
    cells.map(async ({ device, location }) => {
      const summary = recent.findLast((s) => s.available.some((a) => a.device === device && a.location === location));
      if (!summary) return;
      const snapshot = await store.findSnapshot(project.id, summary.date, { device, locations: [location] });
      const result = snapshot?.results[0];
      if (!result) return;
      prior.set(cellKey(device, location), {
        lighthouse: result.lighthouse,
        ...(result.steps
          ? { steps: result.steps.map((step) => ({ name: step.name, lighthouse: stepSkeleton(step) })) }
          : {}),
        states: new Map((result.checks ?? []).map((c) => [checkId(c), c.state])),
      });
    }),
  );
  return prior;
}

const cellKey = (device: Device, location: Location): string => `${device}/${location}`;

/**
 * Sets each result's `checks`: the project's budgets against its result, the previous
 * snapshot's states, and for a failure of a passing check one confirmation run of the cell
 * (budget-alerts.ts has the rule).
 */
export async function checkBudgets(
  store: Pick<SnapshotReadsStore, 'listSnapshots' | 'findSnapshot'>,
  project: ProjectRecord,
  results: NewLocationSnapshot[],
  confirm: (device: Device, location: Location) => Promise<RunOutcome>,
  log: Logger,
): Promise<void> {
  const prior = await readPriorCells(store, project, results);
  await Promise.all(
    results.map(async (result) => {
      const before = prior.get(cellKey(result.device, result.location));
      const steps = result.steps?.map((step) => ({ name: step.name, lighthouse: step.measured }));
      const checks = checksOf(result.measured, steps, project.budgets, before);
      let confirmation: ReturnType<typeof checksOf> | null | undefined;
      if (needsConfirmation(checks, before)) {
        log.info(
          {
            device: result.device,
            location: result.location,
            failing: checks.filter((c) => !c.pass).map((c) => c.message),
          },
          'a budget failed; measuring once more to confirm',
        );
        const outcome = await confirm(result.device, result.location);
        confirmation = outcome.ok
          ? checksOf(
              digestSkeleton(outcome.result.digest),
              outcome.result.steps?.map((step) => ({ name: step.name, lighthouse: digestSkeleton(step.digest) })),
              project.budgets,
              before,
            )
          : null;
      }
      result.checks = settleChecks(checks, before, confirmation);
    }),
  );
}

import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import {
  ARTIFACT_KINDS,
  flowRunTimeoutMs,
  hasBudgets,
  resolvedFlow,
  LIGHTHOUSE_KPI_VERSION,
  truncateToSecond,
  type AuditJob,
  type Device,
  type Location,
  type MissingCell,
  type Revision,
  type UpdateType,
} from '@perfwatch/common';
import type { Dispatcher, RunOutcome } from '../dispatch/run-outcome.ts';
import { createRunMeasurer, type AwayBackoff, type MeasureRun, type RunOptions } from './run-measurer.ts';
import type { CruxClient, FieldData } from '../snapshots/crux/crux-client.ts';
import type { UpdateMode, UpdateObserver } from '../http/metrics.ts';
import { checkBudgets } from '../alerts/budget-alerts.ts';
import type { CredentialTrust } from '../projects/credential-trust.ts';
import { wantsFieldData } from '../projects/project-settings.ts';
import type { SecretBox } from '../accounts/secret-box.ts';
import { noResultError } from './no-result.ts';
import { credentialsOf } from './update-credentials.ts';
import { nextRetest, VERDICT_RULES } from './run-verdicts.ts';
import { cellFromRuns, measured, withFieldData, type RepresentativeRun } from './snapshot-builder.ts';
import type { ArtifactReceiver } from '../artifacts/artifact-receiver.ts';
import type {
  NewLocationSnapshot,
  ProjectRecord,
  SnapshotReadsStore,
  SnapshotsStore,
  UpdateProgress,
} from '../store/store.ts';

export interface UpdateRequest {
  project: ProjectRecord;
  devices: readonly Device[];
  updateType: UpdateType;
  requestId: string;
  /** The code change measured, stored with the snapshot; absent when none was given. */
  revision?: Revision;
  /**
   * Until when a run whose location is away (RUN_FAILURES) is offered again. Without one
   * (sync updates) the update answers with what it has once every run has had its offers.
   */
  deadline?: Date;
  /** Aborted when the gateway stops: a run waiting to offer again ends the update as UpdateInterrupted. */
  signal?: AbortSignal;
}

/** Told how many runs of each (device, location) have finished, as they finish. */
export type ProgressListener = (progress: UpdateProgress[]) => void;

/** Told of every stored snapshot (webhooks announce its budget events). */
type SnapshotListener = (snapshot: {
  project: ProjectRecord;
  updateId: string;
  date: Date;
  results: readonly NewLocationSnapshot[];
}) => Promise<void>;

export interface UpdateOutcome {
  updateId: string;
  date: Date;
  results: NewLocationSnapshot[];
  /** The cells without a result, and why. */
  missing: MissingCell[];
}

export interface UpdateServiceDeps {
  dispatcher: Dispatcher;
  /** Where the snapshot is saved, and the earlier ones its budget checks compare with. */
  store: Pick<SnapshotsStore, 'saveSnapshot'> & Pick<SnapshotReadsStore, 'listSnapshots' | 'findSnapshot'>;
  logger: Logger;
  /** Time an agent may spend on one run. */
  runTimeoutMs: number;
  /** Time the gateway waits for a reply, queueing at busy agents included. */
  replyTimeoutMs: number;
  /** Extra runs per device and location to measure suspect runs again; VERDICT_RULES.maxRetests unless given. */
  maxRetests?: number;
  /** CrUX field data, asked once per device while the runs go on; absent: no field data. */
  crux?: CruxClient;
  /** Told of every dispatch and every finished update (metrics). */
  observer?: UpdateObserver;
  /**
   * Told of every snapshot stored, once stored; its failure is logged, never the update's: a
   * snapshot with budget events is stored marked unannounced, and the sweep announces it.
   */
  onSnapshot?: SnapshotListener;
  /** Tests only: called once the snapshot is stored, before it is announced (PERFWATCH_TEST_KILL_AT). */
  testKill?: (point: 'snapshot-saved') => void;
  /** Opens projects' sealed credentials (pages behind a login); absent: a project with some cannot be updated. */
  secrets?: SecretBox;
  /** The locations credentials may go to; absent: none (a project with credentials cannot be updated). */
  credentialTrust?: CredentialTrust;
  now?: () => Date;
  /** Waits between offers to a location that is away (tests shorten them). */
  awayBackoffMs?: AwayBackoff;
  /** Takes each cell's representative run's artifacts into the artifact store; absent: none are kept. */
  artifacts?: ArtifactReceiver;
  /** The budgets a snapshot is checked against (a site's page inherits some); absent: the project's own. */
  budgetsFor?: (project: ProjectRecord) => Promise<ProjectRecord['budgets']>;
}

/** What the service's functions share: its dependencies, with their defaults, and how a run is measured. */
type ServiceParts = Omit<
  UpdateServiceDeps,
  'dispatcher' | 'replyTimeoutMs' | 'awayBackoffMs' | 'maxRetests' | 'now'
> & {
  maxRetests: number;
  now: () => Date;
  measureRun: MeasureRun;
};

/**
 * One update: `runs` jobs per (device, location), all sent at once so a location with several
 * agents measures in parallel; the representative run per (device, location); one snapshot
 * date shared by all of them.
 */
export function createUpdateService(deps: UpdateServiceDeps) {
  const now = deps.now ?? (() => new Date());
  const parts: ServiceParts = {
    ...deps,
    maxRetests: deps.maxRetests ?? VERDICT_RULES.maxRetests,
    now,
    measureRun: createRunMeasurer({ ...deps, now }),
  };
  const { observer } = deps;

  async function run(
    request: UpdateRequest,
    updateId: string = randomUUID(),
    mode: UpdateMode = 'sync',
    onProgress?: ProgressListener,
  ): Promise<UpdateOutcome> {
    try {
      const outcome = await measure(parts, request, updateId, onProgress);
      observer?.updateDone(mode, request.updateType, outcome.complete ? 'complete' : 'partial');
      return outcome;
    } catch (error) {
      observer?.updateDone(mode, request.updateType, 'failed');
      throw error;
    }
  }

  return { run };
}

/** An update under way: its cells, its log, and its runs, each counted in its progress as it ends. */
interface UpdateInProgress {
  readonly updateId: string;
  readonly project: ProjectRecord;
  readonly log: Logger;
  readonly cells: ReadonlyArray<{ device: Device; location: Location }>;
  readonly started: number;
  readonly artifacts?: ArtifactReceiver;
  readonly observer?: UpdateObserver;
  /** Measures a run of the cell: one of its first runs, a re-test, or the confirmation of a budget. */
  measure(cell: number, runIndex: number | 'confirm', avoidAgent?: string): Promise<RunOutcome>;
  /** The cell gets one run more than the project's (a re-test or a confirmation). */
  addRun(cell: number): void;
}

function startUpdate(
  parts: ServiceParts,
  { project, devices, requestId, deadline, signal }: UpdateRequest,
  updateId: string,
  onProgress: ProgressListener | undefined,
): UpdateInProgress {
  const log = parts.logger.child({ updateId, requestId });
  const auth = credentialsOf(parts, project);
  const cells = devices.flatMap((device) => project.locations.map((location) => ({ device, location })));
  const progress = cells.map(({ device, location }) => ({ device, location, done: 0, total: project.runs }));
  const report = () => onProgress?.(progress.map((p) => ({ ...p })));
  report();
  // A flow's run is several Lighthouse passes: its agent and its reply get a navigation's time for each.
  const flow = project.flow ? resolvedFlow(project.flow, project.url) : undefined;
  const timeoutMs = flow ? flowRunTimeoutMs(flow, parts.runTimeoutMs) : parts.runTimeoutMs;
  const options: RunOptions = {
    requestId,
    user: project.userId,
    ...(timeoutMs > parts.runTimeoutMs ? { longerByMs: timeoutMs - parts.runTimeoutMs } : {}),
    ...(deadline ? { deadline } : {}),
    ...(signal ? { signal } : {}),
  };
  return {
    updateId,
    project,
    log,
    cells,
    started: performance.now(),
    ...(parts.artifacts ? { artifacts: parts.artifacts } : {}),
    ...(parts.observer ? { observer: parts.observer } : {}),
    addRun(cell) {
      progress[cell]!.total += 1;
      report();
    },
    measure(cell, runIndex, avoidAgent) {
      const { device, location } = cells[cell]!;
      const job: AuditJob = {
        jobId: `${updateId}.${device}.${location}.${runIndex}`,
        updateId,
        url: project.url,
        device,
        location,
        runIndex: runIndex === 'confirm' ? project.runs + parts.maxRetests : runIndex,
        timeoutMs,
        ...(auth ? { auth } : {}),
        ...(flow ? { flow } : {}),
      };
      return parts.measureRun(job, avoidAgent ? { ...options, avoidAgent } : options, log).finally(() => {
        progress[cell]!.done += 1;
        report();
      });
    },
  };
}

async function measure(
  parts: ServiceParts,
  request: UpdateRequest,
  updateId: string,
  onProgress?: ProgressListener,
): Promise<UpdateOutcome & { complete: boolean }> {
  const update = startUpdate(parts, request, updateId, onProgress);
  const { project, log } = update;
  // Field data is per page and device, not per location or run: asked once, alongside the runs.
  const crux = wantsFieldData(project) ? parts.crux : undefined;
  const fieldData = Promise.all(
    request.devices.map(async (device) => [device, crux ? await crux.fieldData(project.url, device) : null] as const),
  ).then((entries) => new Map(entries));
  const outcomes = await Promise.all(update.cells.map((_, cell) => measureCell(update, cell, parts.maxRetests)));
  const { results, missing, failures } = gatherCells(outcomes, await fieldData, log);
  if (results.length === 0)
    throw noResultError(failures.map((f) => ({ device: f.device, location: f.location, ...f.outcome.error })));
  // Checked before it is stored, so the checks (and the events they announce) are stored with it.
  // A site's page is held to the budgets it inherits as they are now (sites/site-budgets.ts).
  const budgets = parts.budgetsFor ? await parts.budgetsFor(project) : project.budgets;
  if (hasBudgets(budgets))
    await checkBudgets(
      parts.store,
      { ...project, budgets },
      results,
      (device, location) => {
        const cell = update.cells.findIndex((c) => c.device === device && c.location === location);
        update.addRun(cell);
        return update.measure(cell, 'confirm');
      },
      log,
    );
  const date = await storeSnapshot(parts, update, request, { results, missing }, failures.length);
  return { updateId, date, results, missing, complete: missing.length === 0 };
}

/**
 * A cell's runs, then its suspect runs measured again, one at a time so a re-test does not share
 * the agent with another of this cell's, and on another agent of the location when there is
 * one. The cell is built as soon as its runs are in: the other runs' results are let go then,
 * not held until the update's last cell is done.
 */
async function measureCell(update: UpdateInProgress, cell: number, maxRetests: number) {
  const { device, location } = update.cells[cell]!;
  const runs: Array<RunOutcome & { retestOfRunIndex?: number }> = await Promise.all(
    Array.from({ length: update.project.runs }, (_, runIndex) => update.measure(cell, runIndex)),
  );
  for (let retest = 0; retest < maxRetests; retest++) {
    const suspect = nextRetest(runs.flatMap((r) => (r.ok ? [measured(r)] : [])));
    if (!suspect) break;
    update.addRun(cell);
    const runIndex = update.project.runs + retest;
    update.log.info(
      { device, location, runIndex: suspect.runIndex, retestRunIndex: runIndex, agentId: suspect.agentId },
      'measuring a suspect run again',
    );
    runs.push({ ...(await update.measure(cell, runIndex, suspect.agentId)), retestOfRunIndex: suspect.runIndex });
  }
  const { cell: built, representative, ...rest } = await cellFromRuns(device, location, runs);
  const withKept = built && representative ? await withArtifacts(update, built, representative) : built;
  return { device, location, ...rest, ...(withKept ? { cell: withKept } : {}) };
}

/**
 * The cell with its representative run's artifacts taken into the artifact store, each kept or
 * missing: the snapshot is stored either way. Keyed by the update's id, which names its snapshot
 * before the store has given it one.
 */
async function withArtifacts(
  { project, updateId, artifacts, observer }: Pick<UpdateInProgress, 'project' | 'updateId' | 'artifacts' | 'observer'>,
  cell: NewLocationSnapshot,
  { agentId, jobId }: RepresentativeRun,
): Promise<NewLocationSnapshot> {
  if (!artifacts) return cell;
  const { device, location } = cell;
  const key = { orgId: project.userId, projectId: project.id, snapshotId: updateId, device, location };
  const received = await Promise.all(
    ARTIFACT_KINDS.map(async (kind) => {
      const state = await artifacts.receive({ location, agentId, jobId, key: { ...key, kind } });
      observer?.artifactReceived?.(kind, state.state, state.state === 'stored' ? state.bytes : 0);
      return [kind, state] as const;
    }),
  );
  return { ...cell, artifacts: Object.fromEntries(received) };
}

/** The cells with a result (and their field data), the cells without one, and the failed runs (logged). */
function gatherCells(
  outcomes: ReadonlyArray<Awaited<ReturnType<typeof measureCell>>>,
  fieldData: ReadonlyMap<Device, FieldData | null>,
  log: Logger,
) {
  const results: NewLocationSnapshot[] = [];
  const missing: MissingCell[] = [];
  const failures = outcomes.flatMap(({ device, location, failures: failed }) =>
    failed.map((outcome) => ({ device, location, outcome })),
  );
  for (const { device, location, cell, reason } of outcomes) {
    if (cell) results.push(withFieldData(cell, fieldData.get(device) ?? null));
    else missing.push({ device, location, reason: reason! });
  }
  for (const f of failures)
    log.warn(
      { device: f.device, location: f.location, code: f.outcome.error.code, reason: f.outcome.error.message },
      'run failed',
    );
  return { results, missing, failures };
}

/** Stores the snapshot under one date, announces it, and counts its runs' verdicts. */
async function storeSnapshot(
  { store, now, onSnapshot, observer, testKill }: ServiceParts,
  { project, updateId, log, cells, started }: UpdateInProgress,
  { updateType, revision }: Pick<UpdateRequest, 'updateType' | 'revision'>,
  { results, missing }: { results: NewLocationSnapshot[]; missing: MissingCell[] },
  failedRuns: number,
): Promise<Date> {
  const date = await store.saveSnapshot({
    project,
    updateId,
    date: truncateToSecond(now()),
    updateType,
    results,
    missing,
    kpiVersion: LIGHTHOUSE_KPI_VERSION,
    ...(revision ? { revision } : {}),
  });
  testKill?.('snapshot-saved');
  if (onSnapshot)
    await onSnapshot({ project, updateId, date, results }).catch((error: unknown) =>
      log.error({ err: error }, "could not put the snapshot's budget events in the outbox; the sweep will"),
    );
  for (const r of results)
    for (const judged of r.runs) observer?.runJudged(r.location, r.device, judged.verdict ?? 'reliable');
  log.info(
    {
      cells: cells.length,
      stored: results.length,
      missing: missing.length,
      failedRuns,
      ms: Math.round(performance.now() - started),
    },
    'update done',
  );
  return date;
}

export type UpdateService = ReturnType<typeof createUpdateService>;

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  digestSkeleton,
  hasBudgets,
  LIGHTHOUSE_KPI_VERSION,
  truncateToSecond,
  type AuditJob,
  type PageAuth,
  type Device,
  type Location,
  type MissingCell,
  type UpdateType,
} from '@perfwatch/common';
import type { DispatchOptions, Dispatcher, RunOutcome } from './run-outcome.ts';
import { RUN_FAILURES, type RunFailureCode } from './run-failures.ts';
import type { CruxClient } from './crux/crux-client.ts';
import type { UpdateMode, UpdateObserver } from './metrics.ts';
import { cellKey, checksOf, needsConfirmation, readPriorCells, settleChecks } from './budget-alerts.ts';
import { openProjectAuth } from './project-auth.ts';
import { SecretKeyError, type SecretBox } from './secret-box.ts';
import { nextRetest, VERDICT_RULES, type MeasuredRun } from './run-verdicts.ts';
import { buildLocationSnapshot, NoUsableResult, withFieldData } from './snapshot-builder.ts';
import type { NewLocationSnapshot, ProjectRecord, Store, UpdateProgress } from './store/store.ts';

/** Waits between offers to a location that is away: an agent restarting takes seconds. */
const AWAY_BACKOFF_MS = { first: 1_000, max: 10_000 };
export type AwayBackoff = typeof AWAY_BACKOFF_MS;

export interface UpdateRequest {
  project: ProjectRecord;
  devices: readonly Device[];
  updateType: UpdateType;
  requestId: string;
  /**
   * Until when a run whose location is away (RUN_FAILURES) is offered again. Without one
   * (sync updates) the update answers with what it has once every run has had its offers.
   */
  deadline?: Date;
  /** Aborted when the gateway stops: a run waiting to offer again ends the update as UpdateInterrupted. */
  signal?: AbortSignal;
}

/**
 * `wait`, cut short by `signal`. The listener goes with the wait: the signal is the queue's and
 * lives as long as the gateway, so one left per wait would pile up.
 */
async function untilAborted(wait: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return wait;
  let onAbort = () => {};
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([wait, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** The gateway stopped while the update waited for a location to come back: deliver it again later. */
export class UpdateInterrupted extends Error {
  constructor() {
    super('the gateway stopped while the update waited for a location; it will be delivered again');
    this.name = 'UpdateInterrupted';
  }
}

/** A successful run as verdicts and the snapshot take it: its result, and which run it re-tests. */
function measured(outcome: Extract<RunOutcome, { ok: true }> & { retestOfRunIndex?: number }): MeasuredRun {
  return outcome.retestOfRunIndex === undefined
    ? outcome.result
    : { ...outcome.result, retestOfRunIndex: outcome.retestOfRunIndex };
}

/** What a run of an update is offered with. */
type RunOptions = Pick<UpdateRequest, 'requestId' | 'deadline' | 'signal'> & { user: string; avoidAgent?: string };

/** Told how many runs of each (device, location) have finished, as they finish. */
export type ProgressListener = (progress: UpdateProgress[]) => void;

/** Told of every stored snapshot (webhooks announce its budget events). */
export type SnapshotListener = (snapshot: {
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
  store: Store;
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
  /** Told of every snapshot stored, once stored; its failure is logged, never the update's. */
  onSnapshot?: SnapshotListener;
  /** Opens projects' sealed credentials (pages behind a login); absent: a project with some cannot be updated. */
  secrets?: SecretBox;
  now?: () => Date;
  /** Waits between offers to a location that is away (tests shorten them). */
  awayBackoffMs?: AwayBackoff;
}

/**
 * One update: `runs` jobs per (device, location), all sent at once so a location with several
 * agents measures in parallel; the representative run per (device, location); one snapshot
 * date shared by all of them.
 */
export function createUpdateService({
  dispatcher,
  store,
  logger,
  runTimeoutMs,
  replyTimeoutMs,
  maxRetests = VERDICT_RULES.maxRetests,
  crux,
  observer,
  onSnapshot,
  secrets,
  now = () => new Date(),
  awayBackoffMs = AWAY_BACKOFF_MS,
}: UpdateServiceDeps) {
  /** A chain, not an async function: thousands of runs wait here at once (nats-dispatcher.ts). */
  function dispatch(job: AuditJob, options: DispatchOptions): Promise<RunOutcome> {
    if (!observer) return dispatcher.dispatch(job, options);
    const started = performance.now();
    return dispatcher.dispatch(job, options).then((outcome) => {
      observer.runDispatched(
        job.location,
        job.device,
        outcome.ok ? 'ok' : outcome.error.code,
        (performance.now() - started) / 1000,
      );
      return outcome;
    });
  }

  async function run(
    request: UpdateRequest,
    updateId: string = randomUUID(),
    mode: UpdateMode = 'sync',
    onProgress?: ProgressListener,
  ): Promise<UpdateOutcome> {
    try {
      const outcome = await measure(request, updateId, onProgress);
      observer?.updateDone(mode, request.updateType, outcome.complete ? 'complete' : 'partial');
      return outcome;
    } catch (error) {
      observer?.updateDone(mode, request.updateType, 'failed');
      throw error;
    }
  }

  /**
   * One run: retried once when the agent failed in a way that may pass next time (on another
   * agent of the location when there is one), and offered again while its location is away
   * and the update's deadline has not passed (RUN_FAILURES says which failure is which). Its
   * first offer is a chain: most runs end there, and only the others become a loop.
   */
  function measureRun(job: AuditJob, options: RunOptions, log: Logger): Promise<RunOutcome> {
    return dispatch(job, offerOptions(options, options.avoidAgent)).then((outcome) =>
      outcome.ok || (!RUN_FAILURES[outcome.error.code].retryOnce && !awayUntil(outcome, options.deadline))
        ? outcome
        : measureRunOnward(job, options, log, outcome),
    );
  }

  /** Whether a failed run's location is away and the update's deadline lets it wait for it. */
  function awayUntil(outcome: RunOutcome, deadline: Date | undefined): outcome is Extract<RunOutcome, { ok: false }> {
    return !outcome.ok && deadline !== undefined && RUN_FAILURES[outcome.error.code].locationAway;
  }

  /**
   * Each offer waits as long as a sync update's would; the deadline bounds only the re-offers
   * (an update taken up late, after a backlog, still gets its first offers).
   */
  function offerOptions({ requestId, user }: RunOptions, avoid: string | undefined): DispatchOptions {
    return { timeoutMs: replyTimeoutMs, requestId, user, ...(avoid ? { avoidAgent: avoid } : {}) };
  }

  async function measureRunOnward(
    job: AuditJob,
    options: RunOptions,
    log: Logger,
    first: RunOutcome,
  ): Promise<RunOutcome> {
    const { deadline, signal } = options;
    let outcome = first;
    let jobId = job.jobId;
    let retried = false;
    let offers = 0;
    let backoff = awayBackoffMs.first;
    for (;;) {
      if (!outcome.ok && !retried && RUN_FAILURES[outcome.error.code].retryOnce) {
        retried = true;
        log.info(
          {
            device: job.device,
            location: job.location,
            runIndex: job.runIndex,
            code: outcome.error.code,
            failedOn: outcome.agentId,
          },
          'retrying a failed run once',
        );
        outcome = await dispatch({ ...job, jobId: `${jobId}.retry` }, offerOptions(options, outcome.agentId));
      }
      if (!deadline || !awayUntil(outcome, deadline)) return outcome;
      const left = deadline.getTime() - now().getTime();
      if (left <= 0) return outcome;
      if (signal?.aborted) throw new UpdateInterrupted();
      offers += 1;
      log.info(
        { device: job.device, location: job.location, runIndex: job.runIndex, code: outcome.error.code, offers },
        'location away; offering the run again',
      );
      // An agent of the location announcing room (a restarted one says so at once) ends the wait early.
      const wait = Math.min(left, backoff * (0.5 + Math.random()));
      await untilAborted(dispatcher.roomIn ? dispatcher.roomIn(job.location, wait) : sleep(wait), signal);
      if (signal?.aborted) throw new UpdateInterrupted();
      backoff = Math.min(awayBackoffMs.max, backoff * 2);
      jobId = `${job.jobId}.again${offers}`;
      outcome = await dispatch({ ...job, jobId }, offerOptions(options, options.avoidAgent));
    }
  }

  async function measure(
    { project, devices, updateType, requestId, deadline, signal }: UpdateRequest,
    updateId: string,
    onProgress?: ProgressListener,
  ): Promise<UpdateOutcome & { complete: boolean }> {
    const log = logger.child({ updateId, requestId });
    const auth = credentialsOf(project);
    const cells = devices.flatMap((device) => project.locations.map((location) => ({ device, location })));
    const progress = cells.map(({ device, location }) => ({ device, location, done: 0, total: project.runs }));
    const reportProgress = () => onProgress?.(progress.map((p) => ({ ...p })));
    reportProgress();
    const started = performance.now();
    // Field data is per page and device, not per location or run: asked once, alongside the runs.
    const fieldData = Promise.all(
      devices.map(async (device) => [device, crux ? await crux.fieldData(project.url, device) : null] as const),
    ).then((entries) => new Map(entries));
    const options = {
      requestId,
      user: project.userId,
      ...(deadline ? { deadline } : {}),
      ...(signal ? { signal } : {}),
    };
    const outcomes = await Promise.all(
      cells.map(async ({ device, location }, cell) => {
        const job = (runIndex: number): AuditJob => ({
          jobId: `${updateId}.${device}.${location}.${runIndex}`,
          updateId,
          url: project.url,
          device,
          location,
          runIndex,
          timeoutMs: runTimeoutMs,
          ...(auth ? { auth } : {}),
        });
        const counted = (outcome: Promise<RunOutcome>) =>
          outcome.finally(() => {
            progress[cell]!.done += 1;
            reportProgress();
          });
        const runs: Array<RunOutcome & { retestOfRunIndex?: number }> = await Promise.all(
          Array.from({ length: project.runs }, (_, runIndex) => counted(measureRun(job(runIndex), options, log))),
        );
        // Suspect runs are measured again, one at a time so a re-test does not share the agent
        // with another of this cell's, and on another agent of the location when there is one.
        for (let retest = 0; retest < maxRetests; retest++) {
          const suspect = nextRetest(runs.flatMap((r) => (r.ok ? [measured(r)] : [])));
          if (!suspect) break;
          progress[cell]!.total += 1;
          reportProgress();
          const runIndex = project.runs + retest;
          log.info(
            { device, location, runIndex: suspect.runIndex, retestRunIndex: runIndex, agentId: suspect.agentId },
            'measuring a suspect run again',
          );
          runs.push({
            ...(await counted(measureRun(job(runIndex), { ...options, avoidAgent: suspect.agentId }, log))),
            retestOfRunIndex: suspect.runIndex,
          });
        }
        // The cell is built as soon as its runs are in: the other runs' results are let go then,
        // not held until the update's last cell is done.
        return { device, location, ...(await cellOf(device, location, runs)) };
      }),
    );

    const fieldDataByDevice = await fieldData;
    const results: NewLocationSnapshot[] = [];
    const missing: MissingCell[] = [];
    const failures = outcomes.flatMap(({ device, location, failures: failed }) =>
      failed.map((outcome) => ({ device, location, outcome })),
    );
    for (const { device, location, cell, reason } of outcomes) {
      if (cell) results.push(withFieldData(cell, fieldDataByDevice.get(device) ?? null));
      else missing.push({ device, location, reason: reason! });
    }
    for (const f of failures)
      log.warn(
        { device: f.device, location: f.location, code: f.outcome.error.code, reason: f.outcome.error.message },
        'run failed',
      );

    if (results.length === 0)
      throw noResultError(failures.map((f) => ({ device: f.device, location: f.location, ...f.outcome.error })));

    // Checked before it is stored, so the checks (and the events they announce) are stored with it.
    if (hasBudgets(project.budgets))
      await checkBudgets(
        project,
        results,
        (device, location) => {
          const cell = cells.findIndex((c) => c.device === device && c.location === location);
          progress[cell]!.total += 1;
          reportProgress();
          const job: AuditJob = {
            jobId: `${updateId}.${device}.${location}.confirm`,
            updateId,
            url: project.url,
            device,
            location,
            runIndex: project.runs + maxRetests,
            timeoutMs: runTimeoutMs,
            ...(auth ? { auth } : {}),
          };
          return measureRun(job, options, log).finally(() => {
            progress[cell]!.done += 1;
            reportProgress();
          });
        },
        log,
      );

    const date = await store.saveSnapshot({
      project,
      updateId,
      date: truncateToSecond(now()),
      updateType,
      results,
      missing,
      kpiVersion: LIGHTHOUSE_KPI_VERSION,
    });
    if (onSnapshot)
      await onSnapshot({ project, updateId, date, results }).catch((error: unknown) =>
        log.error({ err: error }, "could not announce the snapshot's budget events"),
      );
    for (const r of results)
      for (const judged of r.runs) observer?.runJudged(r.location, r.device, judged.verdict ?? 'reliable');
    log.info(
      {
        cells: cells.length,
        stored: results.length,
        missing: missing.length,
        failedRuns: failures.length,
        ms: Math.round(performance.now() - started),
      },
      'update done',
    );
    return { updateId, date, results, missing, complete: missing.length === 0 };
  }

  /** A cell's snapshot entry from its runs, or why it has none; and its failed runs. */
  async function cellOf(
    device: Device,
    location: Location,
    runs: ReadonlyArray<RunOutcome & { retestOfRunIndex?: number }>,
  ): Promise<{ cell?: NewLocationSnapshot; reason?: string; failures: Array<Extract<RunOutcome, { ok: false }>> }> {
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
      return { cell: await buildLocationSnapshot(device, location, successes), failures };
    } catch (error) {
      if (!(error instanceof NoUsableResult)) throw error;
      const unusable = { ok: false as const, error: { code: 'BAD_REPLY' as const, message: error.message } };
      return { reason: reasonOf(unusable), failures: [...failures, unusable] };
    }
  }

  /**
   * Sets each result's `checks`: the project's budgets against its result, the previous
   * snapshot's states, and for a failure of a passing check one confirmation run of the cell
   * (budget-alerts.ts has the rule).
   */
  async function checkBudgets(
    project: ProjectRecord,
    results: NewLocationSnapshot[],
    confirm: (device: Device, location: Location) => Promise<RunOutcome>,
    log: Logger,
  ): Promise<void> {
    const prior = await readPriorCells(store, project, results);
    await Promise.all(
      results.map(async (result) => {
        const before = prior.get(cellKey(result.device, result.location));
        const checks = checksOf(result.measured, project.budgets, before);
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
          confirmation = outcome.ok ? checksOf(digestSkeleton(outcome.result.digest), project.budgets, before) : null;
        }
        result.checks = settleChecks(checks, before, confirmation);
      }),
    );
  }

  /** The credentials the project's page needs, opened for this update only. */
  function credentialsOf(project: ProjectRecord): PageAuth | undefined {
    if (!project.auth) return undefined;
    try {
      if (!secrets) throw new SecretKeyError('this gateway has no PERFWATCH_SECRETS_KEY');
      return openProjectAuth(secrets, project);
    } catch (error) {
      // Measuring without them would store the login page as if it were the page.
      throw new NoResultError(
        'CREDENTIALS_UNREADABLE',
        "The project's credentials for its login cannot be read by this gateway.",
        [(error as Error).message],
        true,
      );
    }
  }

  return { run };
}

export type UpdateService = ReturnType<typeof createUpdateService>;

/**
 * Why an update produced nothing: no agent serves any of its locations, every run timed out
 * (no reply from an agent in time, or the page not done within the run timeout), every run
 * failed otherwise (the page did not load, Lighthouse failed), or the project's credentials
 * cannot be read here. http-errors.ts says what each is to a caller.
 */
export type NoResultKind = 'NO_AGENT' | 'TIMED_OUT' | 'FAILED' | 'CREDENTIALS_UNREADABLE';

/** An update that produced nothing; `repeats` when trying it again would fail the same way. */
export class NoResultError extends Error {
  readonly kind: NoResultKind;
  readonly reasons: readonly string[];
  readonly repeats: boolean;
  constructor(kind: NoResultKind, message: string, reasons: readonly string[], repeats: boolean) {
    super(message);
    this.name = 'NoResultError';
    this.kind = kind;
    this.reasons = reasons;
    this.repeats = repeats;
  }
}

function noResultError(
  failures: ReadonlyArray<{ device: Device; location: Location; code: RunFailureCode; message: string }>,
): NoResultError {
  const reasons = [...new Set(failures.map((f) => `${f.device}/${f.location}: ${f.message}`))];
  if (failures.every((f) => f.code === 'NO_RESPONDERS')) {
    return new NoResultError(
      'NO_AGENT',
      "No agent serves any of the project's locations. Try again later.",
      reasons,
      false,
    );
  }
  if (failures.every((f) => f.code === 'TIMEOUT' || f.code === 'RUN_TIMEOUT')) {
    return new NoResultError('TIMED_OUT', 'Every run of the update timed out.', reasons, false);
  }
  return new NoResultError(
    'FAILED',
    'Every run of the update failed.',
    reasons,
    failures.every((f) => RUN_FAILURES[f.code].repeats),
  );
}

import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AuditJob } from '@perfwatch/common';
import type { UpdateObserver } from '../http/metrics.ts';
import { RUN_FAILURES } from '../dispatch/run-failures.ts';
import type { DispatchOptions, Dispatcher, RunOutcome } from '../dispatch/run-outcome.ts';

/** Waits between offers to a location that is away: an agent restarting takes seconds. */
const AWAY_BACKOFF_MS = { first: 1_000, max: 10_000 };
export type AwayBackoff = typeof AWAY_BACKOFF_MS;

/** What a run of an update is offered with. */
export interface RunOptions {
  requestId: string;
  user: string;
  /** Until when a run whose location is away is offered again (UpdateRequest.deadline). */
  deadline?: Date;
  /** Aborted when the gateway stops (UpdateRequest.signal). */
  signal?: AbortSignal;
  /** An agent the run should not go to when the location has another. */
  avoidAgent?: string;
  /** Time a reply may take beyond a navigation's (a flow's run has several Lighthouse passes). */
  longerByMs?: number;
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

export interface RunMeasurerDeps {
  dispatcher: Dispatcher;
  /** Time the gateway waits for a reply, queueing at busy agents included. */
  replyTimeoutMs: number;
  /** Told of every dispatch (metrics). */
  observer?: UpdateObserver;
  now?: () => Date;
  /** Waits between offers to a location that is away (tests shorten them). */
  awayBackoffMs?: AwayBackoff;
}

/** Measures one run of an update to its outcome: the dispatch, the one retry, the re-offers. */
export type MeasureRun = (job: AuditJob, options: RunOptions, log: Logger) => Promise<RunOutcome>;

/** The dependencies with their defaults, as the functions below take them. */
type MeasurerParts = Required<Omit<RunMeasurerDeps, 'observer'>> & Pick<RunMeasurerDeps, 'observer'>;

/**
 * One run: retried once when the agent failed in a way that may pass next time (on another
 * agent of the location when there is one), and offered again while its location is away and
 * the update's deadline has not passed (RUN_FAILURES says which failure is which). Its first
 * offer is a chain, not an async function: thousands of runs wait there at once
 * (nats-dispatcher.ts), most runs end there, and only the others become a loop.
 */
export function createRunMeasurer({
  now = () => new Date(),
  awayBackoffMs = AWAY_BACKOFF_MS,
  ...deps
}: RunMeasurerDeps): MeasureRun {
  const parts: MeasurerParts = { ...deps, now, awayBackoffMs };
  return (job, options, log) =>
    dispatch(parts, job, offerOptions(parts, options, options.avoidAgent)).then((outcome) =>
      outcome.ok || (!RUN_FAILURES[outcome.error.code].retryOnce && !awayUntil(outcome, options.deadline))
        ? outcome
        : measureRunOnward(parts, job, options, log, outcome),
    );
}

/** One offer, told to the observer (metrics). */
function dispatch({ dispatcher, observer }: MeasurerParts, job: AuditJob, options: DispatchOptions) {
  if (!observer) return dispatcher.dispatch(job, options);
  const started = performance.now();
  return dispatcher.dispatch(job, options).then((outcome) => {
    const code = outcome.ok ? 'ok' : outcome.error.code;
    observer.runDispatched(job.location, job.device, code, (performance.now() - started) / 1000);
    return outcome;
  });
}

/** Whether a failed run's location is away and the update's deadline lets it wait for it. */
function awayUntil(outcome: RunOutcome, deadline: Date | undefined): outcome is Extract<RunOutcome, { ok: false }> {
  return !outcome.ok && deadline !== undefined && RUN_FAILURES[outcome.error.code].locationAway;
}

/**
 * Each offer waits as long as a sync update's would; the deadline bounds only the re-offers
 * (an update taken up late, after a backlog, still gets its first offers).
 */
function offerOptions(
  { replyTimeoutMs }: MeasurerParts,
  { requestId, user, longerByMs = 0 }: RunOptions,
  avoid: string | undefined,
): DispatchOptions {
  return { timeoutMs: replyTimeoutMs + longerByMs, requestId, user, ...(avoid ? { avoidAgent: avoid } : {}) };
}

/** The retry and the re-offers of a run whose first offer failed. */
async function measureRunOnward(
  parts: MeasurerParts,
  job: AuditJob,
  options: RunOptions,
  log: Logger,
  first: RunOutcome,
): Promise<RunOutcome> {
  const { deadline, signal } = options;
  const facts = { device: job.device, location: job.location, runIndex: job.runIndex };
  let outcome = first;
  let jobId = job.jobId;
  let retried = false;
  let backoff = parts.awayBackoffMs.first;
  for (let offers = 1; ; offers++) {
    if (!outcome.ok && !retried && RUN_FAILURES[outcome.error.code].retryOnce) {
      retried = true;
      log.info({ ...facts, code: outcome.error.code, failedOn: outcome.agentId }, 'retrying a failed run once');
      outcome = await dispatch(
        parts,
        { ...job, jobId: `${jobId}.retry` },
        offerOptions(parts, options, outcome.agentId),
      );
    }
    if (!deadline || !awayUntil(outcome, deadline)) return outcome;
    const left = deadline.getTime() - parts.now().getTime();
    if (left <= 0) return outcome;
    if (signal?.aborted) throw new UpdateInterrupted();
    log.info({ ...facts, code: outcome.error.code, offers }, 'location away; offering the run again');
    // An agent of the location announcing room (a restarted one says so at once) ends the wait early.
    const wait = Math.min(left, backoff * (0.5 + Math.random()));
    await untilAborted(parts.dispatcher.roomIn ? parts.dispatcher.roomIn(job.location, wait) : sleep(wait), signal);
    if (signal?.aborted) throw new UpdateInterrupted();
    backoff = Math.min(parts.awayBackoffMs.max, backoff * 2);
    jobId = `${job.jobId}.again${offers}`;
    outcome = await dispatch(parts, { ...job, jobId }, offerOptions(parts, options, options.avoidAgent));
  }
}

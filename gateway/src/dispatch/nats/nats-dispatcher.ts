import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import Queue from 'yocto-queue';
import type { AgentRegistry } from '../agent-registry.ts';
import { FairWaitingRoom, type Ticket } from '../fair-waiting-room.ts';
import type { AuditJob, Location } from '@perfwatch/common';
import { gatewayDefaults } from '../../config.ts';
import { createNatsOfferer, DEFAULT_TAKEN_WITHIN_MS, type NatsOfferer } from './nats-offer.ts';
import { RUN_FAILURES } from '../run-failures.ts';
import type { DispatchOptions, Dispatcher, RunOutcome } from '../run-outcome.ts';

/**
 * An agent takes a job only with room for it and ends the run within the job's timeout, so a
 * reply later than that and this margin (encoding, the trip back) will not come: its agent died
 * with the run. The offer ends as TIMEOUT then, instead of holding the run for the whole
 * update's wait, and an update with a deadline offers it again.
 */
const REPLY_GRACE_MS = 30_000;

/**
 * A run the dispatcher holds until it has an outcome. Runs waiting for a place are this record
 * and nothing more: at a thousand updates 35,000 runs wait at once, and as suspended async
 * functions (with their promises, closures and a p-limit entry) they were 7.8 kB each, 250 MB
 * of heap that every major GC went through (bench/results.md).
 */
class PendingRun {
  /** Grows between offers while agents stay busy. */
  backoff: number;
  /** Counted in its location's waiting runs. */
  waits = false;
  readonly deadline: number;
  readonly job: AuditJob;
  readonly options: DispatchOptions;
  readonly room: FairWaitingRoom;
  readonly ticket: Ticket;
  readonly resolve: (outcome: RunOutcome) => void;
  constructor(
    job: AuditJob,
    options: DispatchOptions,
    room: FairWaitingRoom,
    resolve: (outcome: RunOutcome) => void,
    firstBackoff: number,
  ) {
    this.job = job;
    this.options = options;
    this.room = room;
    this.ticket = room.enter(options.user ?? '');
    this.resolve = resolve;
    this.deadline = Date.now() + options.timeoutMs;
    this.backoff = firstBackoff;
  }
}

export interface NatsDispatcherOptions {
  nc: NatsConnection;
  logger: Logger;
  registry?: AgentRegistry;
  offerAgainMs?: { min: number; max: number };
  /**
   * Offers awaiting a reply at once. Replies the gateway has not read yet queue in nats-server,
   * which cuts a client past its max_pending (64 MB) as a slow consumer, losing every reply in
   * flight: bounding the offers bounds that queue. Runs beyond it wait in the gateway, in the
   * order they asked for an offer place.
   */
  maxInFlight?: number;
  takenWithinMs?: number;
}

/**
 * Sends each audit job as a NATS request on its location's subject (nats-offer.ts) until an
 * agent takes it, and resolves with its outcome. Never rejects: every way a run can fail is a
 * value.
 *
 * With a registry, a location whose agents all went silent fails at once (NATS may still route
 * to a frozen agent, and the request would only time out), and one whose agents are all busy
 * (they leave the queue group at capacity, so NATS finds no responder) is offered the job again
 * as soon as one of them announces room, the best-ranked run first (fair-waiting-room.ts). The
 * wait is driven by those announcements, which a retry library's fixed backoff cannot express,
 * hence the steps here. A run is a record moved between steps by callbacks, never a suspended
 * function: see PendingRun.
 */
export function createNatsDispatcher(options: NatsDispatcherOptions): Dispatcher {
  const dispatcher = new NatsDispatcher(options);
  return {
    dispatch: (job, dispatchOptions) => dispatcher.dispatch(job, dispatchOptions),
    waiting: (location) => dispatcher.waiting(location),
    roomIn: (location, ms) => dispatcher.roomIn(location, ms),
  };
}

const jitter = (ms: number) => ms * (0.5 + Math.random());

const timedOut = (run: PendingRun): RunOutcome => ({
  ok: false,
  error: {
    code: 'TIMEOUT',
    message: `every agent of ${run.job.location} stayed busy for ${run.options.timeoutMs} ms`,
  },
});

class NatsDispatcher {
  readonly #offer: NatsOfferer['offer'];
  readonly #registry: AgentRegistry | undefined;
  readonly #offerAgainMs: { min: number; max: number };
  readonly #maxInFlight: number;
  readonly #waitingBy = new Map<Location, number>();
  readonly #rooms = new Map<Location, FairWaitingRoom>();
  /** Runs ready to offer, waiting for one of the maxInFlight offer places. */
  readonly #forOfferPlace = new Queue<PendingRun>();
  #offering = 0;

  constructor({
    nc,
    logger,
    registry,
    offerAgainMs = { min: 100, max: 1_000 },
    maxInFlight = gatewayDefaults.MAX_RUNS_IN_FLIGHT,
    takenWithinMs = DEFAULT_TAKEN_WITHIN_MS,
  }: NatsDispatcherOptions) {
    this.#offer = createNatsOfferer({ nc, logger, registry, takenWithinMs }).offer;
    this.#registry = registry;
    this.#offerAgainMs = offerAgainMs;
    this.#maxInFlight = maxInFlight;
    registry?.onRoom((location, places) => this.#rooms.get(location)?.wake(places));
  }

  dispatch(job: AuditJob, options: DispatchOptions): Promise<RunOutcome> {
    const room =
      this.#rooms.get(job.location) ?? this.#rooms.set(job.location, new FairWaitingRoom()).get(job.location)!;
    return new Promise((resolve) =>
      this.#tryOffer(new PendingRun(job, options, room, resolve, this.#offerAgainMs.min)),
    );
  }

  waiting(location: Location): number {
    return this.#waitingBy.get(location) ?? 0;
  }

  roomIn(location: Location, ms: number): Promise<void> {
    return this.#registry ? this.#registry.roomIn(location, ms) : new Promise((resolve) => setTimeout(resolve, ms));
  }

  #waits(run: PendingRun, on: boolean): void {
    if (on === run.waits) return;
    run.waits = on;
    this.#waitingBy.set(run.job.location, (this.#waitingBy.get(run.job.location) ?? 0) + (on ? 1 : -1));
  }

  #settle(run: PendingRun, outcome: RunOutcome): void {
    this.#waits(run, false);
    run.room.leave(run.ticket);
    run.resolve(outcome);
  }

  /** Then tries again: when an agent announces a place and the run's turn has come, or after the delay. */
  #waitForRoom(run: PendingRun, delay: number, woken: 'room' | 'timer'): void {
    this.#waits(run, true);
    const again = () => {
      run.backoff = Math.min(this.#offerAgainMs.max, run.backoff * 1.5);
      this.#tryOffer(run);
    };
    if (woken === 'room') run.room.wait(run.ticket, delay, again);
    else setTimeout(again, delay);
  }

  /** The run's next step: it fails, waits behind better-ranked runs, or asks for an offer place. */
  #tryOffer(run: PendingRun): void {
    if (this.#registry?.silent(run.job.location)) {
      return this.#settle(run, {
        ok: false,
        error: { code: 'NO_RESPONDERS', message: `the agents of ${run.job.location} stopped announcing themselves` },
      });
    }
    // Runs ranked before this one wait for a place: wait behind them, not beside them. The
    // best-ranked waiter's own timer is what offers again when no announcement comes.
    if (run.room.behind(run.ticket)) {
      const left = run.deadline - Date.now();
      if (left <= 0) return this.#settle(run, timedOut(run));
      return this.#waitForRoom(run, Math.min(left, jitter(run.backoff)), 'room');
    }
    // Waiting for an offer place is waiting for room too.
    this.#waits(run, true);
    if (this.#offering < this.#maxInFlight) this.#startOffer(run);
    else this.#forOfferPlace.enqueue(run);
  }

  #startOffer(run: PendingRun): void {
    this.#offering++;
    this.#waits(run, false);
    const { job, options } = run;
    const agents = this.#registry?.agents(job.location);
    const avoid = options.avoidAgent;
    const exclude = avoid !== undefined && agents?.some((a) => a.agentId !== avoid) ? [avoid] : undefined;
    const timeoutMs = Math.max(1, Math.min(run.deadline - Date.now(), job.timeoutMs + REPLY_GRACE_MS));
    // An offer never rejects; should it all the same, the offer place is given back and the run ends.
    const sent = this.#offer(exclude ? { ...job, excludeAgents: exclude } : job, {
      timeoutMs,
      requestId: options.requestId,
    }).catch((error: unknown): RunOutcome => ({
      ok: false,
      error: { code: 'INTERNAL', message: `dispatch failed: ${(error as Error).message}` },
    }));
    void sent.then((outcome) => {
      this.#offering--;
      const next = this.#forOfferPlace.dequeue();
      if (next) this.#startOffer(next);
      this.#offered(run, outcome);
    });
  }

  #offered(run: PendingRun, outcome: RunOutcome): void {
    if (outcome.ok) return this.#settle(run, outcome);
    const allBusy =
      outcome.error.code === 'NO_RESPONDERS' && (this.#registry?.agents(run.job.location)?.length ?? 0) > 0;
    if (!RUN_FAILURES[outcome.error.code].offerAgain && !allBusy) return this.#settle(run, outcome);
    const left = run.deadline - Date.now();
    if (left <= 0) return this.#settle(run, timedOut(run));
    this.#waitForRoom(
      run,
      Math.min(left, jitter(run.backoff)),
      outcome.error.code === 'AGENT_EXCLUDED' ? 'timer' : 'room',
    );
  }
}

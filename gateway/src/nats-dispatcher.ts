import { EventEmitter, once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { NatsConnection } from '@nats-io/nats-core';
import { errors as natsErrors, headers as natsHeaders } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { AgentRegistry } from './agent-registry.ts';
import { FairWaitingRoom, type Ticket } from './fair-waiting-room.ts';
import { agentIdSchema, auditSubject, digestRun, encodeJob, HEADERS, receiveReply, ReplyRefused, replyMismatch, type AuditJob, type AuditRunResult, type DigestedRunResult, type Location, type ReceivedReply } from '@perfwatch/common';
import { ResultBytes } from './result-bytes.ts';
import { reportedFailure, RUN_FAILURES, type RunFailureCode } from './run-failures.ts';


/**
 * A successful run as the gateway holds it: what it reads of the run (its digest) and the
 * result it stores, compressed (result-bytes.ts).
 */
export type ReceivedRun = DigestedRunResult & { lighthouse: ResultBytes };

export type RunOutcome =
  | { ok: true; result: ReceivedRun }
  | { ok: false; agentId?: string; error: { code: RunFailureCode; message: string } };

export interface DispatchOptions {
  /** How long the run may take from now, waiting for a free agent included. */
  timeoutMs: number;
  requestId: string;
  /** An agent that failed this run: another agent of the location gets it when there is one. */
  avoidAgent?: string;
  /** Whose run it is: when every agent is busy, places go to users fairly (fair-waiting-room.ts). */
  user?: string;
}

export interface Dispatcher {
  dispatch(job: AuditJob, options: DispatchOptions): Promise<RunOutcome>;
  /** Runs of a location waiting for an agent with room (every agent was busy when offered). */
  waiting?(location: Location): number;
  /** Resolves when an agent of the location says it has room (one starting, or done with a run), or after `ms`. */
  roomIn?(location: Location, ms: number): Promise<void>;
}

/**
 * A race entrant that never wins: one per race. A race leaves its reactions on every entrant,
 * and those hold the winner's value; on an entrant shared by all races they were never let go,
 * and every reply the gateway ever received stayed in memory with them.
 */
const never = () => new Promise<never>(() => {});

/**
 * The gateway's NATS connection: without nats.js's async traces, which build two errors with
 * stacks for every request to name its caller should it fail (a run's failures here say which
 * job failed already); at a thousand updates they were 2 % of the gateway's CPU.
 */
export const GATEWAY_NATS_OPTIONS = { name: 'perfwatch-gateway', noAsyncTraces: true };

/** Why an offer's waiters are let go: given, so aborting builds no DOMException per offer. */
const OFFER_SETTLED = 'offer settled';

/** A whole run (agents before v1.5, local mode) as the gateway holds it. */
export function receivedRun({ lhr, ...run }: AuditRunResult): ReceivedRun {
  return { ...run, digest: digestRun(lhr), lighthouse: ResultBytes.fromResult(lhr) };
}

/**
 * An agent's v1 reply as the outcome of its run, whatever transport brought it. A whole result
 * (agents before v1.5, local mode) is digested here, the way a v1.5 agent digests its own.
 */
export function replyOutcome(reply: ReceivedReply): RunOutcome {
  if (reply.ok && 'lighthouseGzip' in reply) return { ok: true, result: { ...reply.result, lighthouse: ResultBytes.fromGzip(reply.lighthouseGzip) } };
  if (reply.ok) return { ok: true, result: receivedRun(reply.result) };
  const error = reportedFailure(reply.error);
  return reply.agentId === undefined ? { ok: false, error } : { ok: false, agentId: reply.agentId, error };
}

/**
 * How long an agent of v1.4 has to announce that it took an offered job. NATS drops a job
 * without a word when it reaches a region's server just after the agent there left the queue
 * group: the hub still saw the region's interest. Without this the run would wait its whole
 * reply deadline (minutes); with it, it is offered again within seconds. An agent announces the
 * moment it takes a job, so only a lost offer (or an agent held up this long, whose late run is
 * then done twice) goes past it.
 */
export const DEFAULT_TAKEN_WITHIN_MS = 5_000;

/**
 * An agent takes a job only with room for it and ends the run within the job's timeout, so a
 * reply later than that and this margin (encoding, the trip back) will not come: its agent died
 * with the run. The offer ends as TIMEOUT then, instead of holding the run for the whole
 * update's wait, and an update with a deadline offers it again.
 */
const REPLY_GRACE_MS = 30_000;

/** Runs a gateway has offered and awaits at once, unless configured (MAX_RUNS_IN_FLIGHT). */
export const DEFAULT_MAX_RUNS_IN_FLIGHT = 256;

/**
 * Sends one audit job as a NATS request on its location's subject and turns whatever comes
 * back, or does not, into a RunOutcome. Never throws: every way a run can fail is a value.
 *
 * With a registry, a location whose agents all went silent fails at once (NATS may still route
 * to a frozen agent, and the request would only time out), and one whose agents
 * are all busy (they leave the queue group at capacity, so NATS finds no responder) is offered
 * the job again as soon as one of them announces room. The wait is driven by those
 * announcements, which a retry library's fixed backoff cannot express, hence the loop here.
 */
export function createNatsDispatcher({
  nc,
  logger,
  registry,
  offerAgainMs = { min: 100, max: 1_000 },
  maxInFlight = DEFAULT_MAX_RUNS_IN_FLIGHT,
  takenWithinMs = DEFAULT_TAKEN_WITHIN_MS,
}: {
  nc: NatsConnection;
  logger: Logger;
  registry?: AgentRegistry;
  offerAgainMs?: { min: number; max: number };
  /**
   * Offers awaiting a reply at once. Replies the gateway has not read yet queue in nats-server,
   * which cuts a client past its max_pending (64 MB) as a slow consumer, losing every reply in
   * flight: bounding the offers bounds that queue. Runs beyond it wait in the gateway.
   */
  maxInFlight?: number;
  takenWithinMs?: number;
}): Dispatcher {
  const waitingBy = new Map<Location, number>();
  const inFlight = pLimit(maxInFlight);
  const rooms = new Map<Location, FairWaitingRoom>();
  const roomOf = (location: Location) => rooms.get(location) ?? rooms.set(location, new FairWaitingRoom()).get(location)!;
  registry?.onRoom((location, places) => rooms.get(location)?.wake(places));

  // nats.js keeps a request whose reply was lost in a disconnect pending until its timeout
  // (minutes for a run): every offer in flight is given up at the next disconnect instead, and
  // no offer goes out while disconnected (its reply could arrive before the reply
  // subscription is back, and be lost the same way).
  // Listeners are per offer and removed once it settles: a promise kept for "the next
  // disconnect" would gather a reaction from every offer until a disconnect came.
  let connected = true;
  const link = new EventEmitter().setMaxListeners(0);
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        logger.warn({ offersInFlight: inFlight.activeCount }, 'NATS connection lost; the runs in flight will be offered again');
        connected = false;
        link.emit('disconnect');
      } else if (status.type === 'reconnect') {
        connected = true;
        link.emit('reconnect');
      }
    }
  })().catch(() => undefined);

  async function dispatch(job: AuditJob, options: DispatchOptions): Promise<RunOutcome> {
    let waits = false;
    const wait = (on: boolean) => {
      if (on === waits) return;
      waits = on;
      waitingBy.set(job.location, (waitingBy.get(job.location) ?? 0) + (on ? 1 : -1));
    };
    try {
      return await offerUntilTaken(job, options, wait);
    } finally {
      wait(false);
    }
  }

  async function offerUntilTaken(job: AuditJob, { timeoutMs, requestId, avoidAgent, user = '' }: DispatchOptions, wait: (on: boolean) => void): Promise<RunOutcome> {
    const room = roomOf(job.location);
    const ticket = room.enter(user);
    try {
      return await offerInTurn(job, { timeoutMs, requestId, avoidAgent }, wait, room, ticket);
    } finally {
      room.leave(ticket);
    }
  }

  async function offerInTurn(job: AuditJob, { timeoutMs, requestId, avoidAgent }: DispatchOptions, wait: (on: boolean) => void, room: FairWaitingRoom, ticket: Ticket): Promise<RunOutcome> {
    const deadline = Date.now() + timeoutMs;
    let backoff = offerAgainMs.min;
    const timedOut = (): RunOutcome => ({ ok: false, error: { code: 'TIMEOUT', message: `every agent of ${job.location} stayed busy for ${timeoutMs} ms` } });
    for (;;) {
      const agents = registry?.agents(job.location);
      if (registry?.silent(job.location)) {
        return { ok: false, error: { code: 'NO_RESPONDERS', message: `the agents of ${job.location} stopped announcing themselves` } };
      }
      // Runs ranked before this one wait for a place: wait behind them, not beside them. The
      // best-ranked waiter's own timer is what offers again when no announcement comes.
      if (room.behind(ticket)) {
        const left = deadline - Date.now();
        if (left <= 0) return timedOut();
        wait(true);
        await room.wait(ticket, Math.min(left, backoff * (0.5 + Math.random())));
        backoff = Math.min(offerAgainMs.max, backoff * 1.5);
        continue;
      }
      const exclude = avoidAgent !== undefined && agents?.some((a) => a.agentId !== avoidAgent) ? [avoidAgent] : undefined;
      // Waiting for an offer slot is waiting for room too: counted until the slot is this run's,
      // whenever p-limit starts it (not read from its counters, whose timing differs by version).
      wait(true);
      const outcome = await inFlight(() => {
        wait(false);
        return offer(exclude ? { ...job, excludeAgents: exclude } : job, { timeoutMs: Math.max(1, Math.min(deadline - Date.now(), job.timeoutMs + REPLY_GRACE_MS)), requestId });
      });
      if (outcome.ok) return outcome;
      const allBusy = outcome.error.code === 'NO_RESPONDERS' && (registry?.agents(job.location)?.length ?? 0) > 0;
      if (!RUN_FAILURES[outcome.error.code].offerAgain && !allBusy) return outcome;
      const left = deadline - Date.now();
      if (left <= 0) return timedOut();
      wait(true);
      const delay = Math.min(left, backoff * (0.5 + Math.random()));
      // Woken by an agent announcing a place when this run's turn has come, or at the delay.
      await (outcome.error.code !== 'AGENT_EXCLUDED' ? room.wait(ticket, delay) : sleep(delay));
      backoff = Math.min(offerAgainMs.max, backoff * 1.5);
    }
  }

  return { dispatch, waiting: (location) => waitingBy.get(location) ?? 0, roomIn: (location, ms) => (registry ? registry.roomIn(location, ms) : sleep(ms)) };

  async function offer(job: AuditJob, { timeoutMs, requestId }: { timeoutMs: number; requestId: string }): Promise<RunOutcome> {
    const h = natsHeaders();
    h.set(HEADERS.requestId, requestId);
    if (!connected) {
      const started = Date.now();
      const back = await once(link, 'reconnect', { signal: AbortSignal.timeout(timeoutMs) }).then(() => true, () => false);
      if (!back) return { ok: false, error: { code: 'TIMEOUT', message: `no NATS connection to reach ${job.location} for ${timeoutMs} ms` } };
      timeoutMs = Math.max(1, timeoutMs - (Date.now() - started));
    }
    let reply;
    let onDisconnect = () => {};
    const ended = new AbortController();
    try {
      // This gateway reads two-part replies: the run's digest, and its result kept as sent.
      const request = nc.request(auditSubject(job.location), encodeJob({ ...job, digest: true }), { timeout: timeoutMs, headers: h });
      request.catch(() => undefined);
      const lost = new Promise<null>((resolve) => {
        onDisconnect = () => resolve(null);
        link.once('disconnect', onDisconnect);
      });
      // A request left behind here is only forgotten: nats.js cannot withdraw it, and should its
      // agent answer after all, the reply finds no one waiting.
      const untaken = registry?.confirmsTakes(job.location)
        ? registry.taken(job.location, job.jobId, Math.min(takenWithinMs, timeoutMs), ended.signal).then((taken) => (taken ? never() : 'untaken' as const))
        : never();
      reply = await Promise.race([request, lost, untaken]).finally(() => {
        link.off('disconnect', onDisconnect);
        ended.abort(OFFER_SETTLED);
      });
      if (reply === null) return { ok: false, error: { code: 'DISCONNECTED', message: `the reply from ${job.location} was lost with the NATS connection` } };
      if (reply === 'untaken') {
        logger.warn({ jobId: job.jobId, requestId, location: job.location, waitedMs: takenWithinMs }, 'no agent took an offered job; offering it again');
        return { ok: false, error: { code: 'UNTAKEN', message: `no agent of ${job.location} took the job within ${takenWithinMs} ms` } };
      }
    } catch (error) {
      if (error instanceof natsErrors.RequestError && error.isNoResponders()) {
        return { ok: false, error: { code: 'NO_RESPONDERS', message: `no agent serves ${job.location}` } };
      }
      if (error instanceof natsErrors.TimeoutError || (error instanceof Error && error.cause instanceof natsErrors.TimeoutError)) {
        return { ok: false, error: { code: 'TIMEOUT', message: `no reply from ${job.location} within ${timeoutMs} ms` } };
      }
      logger.error({ err: error, jobId: job.jobId, requestId }, 'dispatch failed');
      return { ok: false, error: { code: 'INTERNAL', message: `dispatch failed: ${(error as Error).message}` } };
    }
    // The agent's id, as it claims it, names the agent in what the run failed of; only a
    // well-formed id is repeated (agents are run by other operators).
    const claimed = agentIdSchema.safeParse(reply.headers?.get(HEADERS.agentId));
    const agent = claimed.success ? claimed.data : undefined;
    const from = agent ? `agent ${agent} of ${job.location}` : `an agent of ${job.location}`;
    const refused = (why: string): RunOutcome => {
      logger.warn({ jobId: job.jobId, requestId, location: job.location, agentId: agent, reason: why }, 'refused an agent reply');
      return { ok: false, ...(agent ? { agentId: agent } : {}), error: { code: 'BAD_REPLY', message: `${from} sent a reply that was refused: ${why}` } };
    };
    let decoded: ReceivedReply;
    try {
      decoded = await receiveReply(reply.data, reply.headers?.get(HEADERS.contentEncoding) || undefined, reply.headers?.get(HEADERS.replyParts) || undefined);
    } catch (error) {
      // Every way decodeReply refuses a reply is a ReplyRefused; anything else still becomes an
      // outcome, since a dispatch never throws.
      return refused(error instanceof ReplyRefused ? error.message : 'it could not be read');
    }
    const mismatch = replyMismatch(job, decoded);
    if (mismatch) return refused(`it answers with ${mismatch}`);
    return replyOutcome(decoded);
  }
}
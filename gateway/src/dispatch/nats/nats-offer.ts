import { EventEmitter, once } from 'node:events';
import type { Msg, NatsConnection } from '@nats-io/nats-core';
import { headers as natsHeaders } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { AgentRegistry } from '../agent-registry.ts';
import {
  agentIdSchema,
  auditSubject,
  encodeJob,
  HEADERS,
  receiveReply,
  ReplyRefused,
  replyMismatch,
  type AuditJob,
  type ReceivedReply,
} from '@perfwatch/common';
import { replyInbox, type ReplyInbox, type RequestEnd } from './nats-reply-inbox.ts';
import { replyOutcome, type RunOutcome } from '../run-outcome.ts';

/**
 * The gateway's NATS connection: without nats.js's async traces, which build two errors with
 * stacks for every request to name its caller should it fail (a run's failures here say which
 * job failed already); at a thousand updates they were 2 % of the gateway's CPU.
 */
export const GATEWAY_NATS_OPTIONS = { name: 'perfwatch-gateway', noAsyncTraces: true };

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
 * A race entrant that never wins: one per race. A race leaves its reactions on every entrant,
 * and those hold the winner's value; on an entrant shared by all races they were never let go,
 * and every reply the gateway ever received stayed in memory with them.
 */
const never = () => new Promise<never>(() => {});

/** Why an offer's waiters are let go: given, so aborting builds no DOMException per offer. */
const OFFER_SETTLED = 'offer settled';

export interface NatsOfferer {
  /** One offer of a job to its location's agents, as a NATS request; never throws. */
  offer(job: AuditJob, options: { timeoutMs: number; requestId: string }): Promise<RunOutcome>;
}

/**
 * Offers jobs as NATS requests and turns whatever comes back, or does not, into a RunOutcome:
 * every way an offer can fail is a value.
 *
 * nats.js keeps a request whose reply was lost in a disconnect pending until its timeout
 * (minutes for a run): every offer in flight is given up at the next disconnect instead, and
 * no offer goes out while disconnected (its reply could arrive before the reply subscription is
 * back, and be lost the same way). Listeners are per offer and removed once it settles: a
 * promise kept for "the next disconnect" would gather a reaction from every offer until a
 * disconnect came.
 */
export function createNatsOfferer({
  nc,
  logger,
  registry,
  takenWithinMs = DEFAULT_TAKEN_WITHIN_MS,
}: {
  nc: NatsConnection;
  logger: Logger;
  registry?: AgentRegistry;
  takenWithinMs?: number;
}): NatsOfferer {
  const link: Link = {
    inbox: replyInbox(nc),
    events: new EventEmitter().setMaxListeners(0),
    connected: true,
    offers: 0,
  };
  void followConnection(nc, link, logger).catch(() => undefined);
  const context = { link, registry, takenWithinMs };

  async function offer(
    job: AuditJob,
    { timeoutMs, requestId }: { timeoutMs: number; requestId: string },
  ): Promise<RunOutcome> {
    if (!link.connected) {
      const started = Date.now();
      const back = await once(link.events, 'reconnect', { signal: AbortSignal.timeout(timeoutMs) }).then(
        () => true,
        () => false,
      );
      if (!back)
        return {
          ok: false,
          error: { code: 'TIMEOUT', message: `no NATS connection to reach ${job.location} for ${timeoutMs} ms` },
        };
      timeoutMs = Math.max(1, timeoutMs - (Date.now() - started));
    }
    link.offers++;
    const end = await request(context, job, timeoutMs, requestId).finally(() => link.offers--);
    if ('reply' in end) return readReply(end.reply, job, requestId, logger);
    return unanswered(end, job, { timeoutMs, requestId, takenWithinMs }, logger);
  }

  return { offer };
}

/** The gateway's NATS link as its offers see it. */
interface Link {
  readonly inbox: ReplyInbox;
  /** `disconnect` and `reconnect`, as nats.js reports them. */
  readonly events: EventEmitter;
  connected: boolean;
  /** Offers awaiting their end. */
  offers: number;
}

async function followConnection(nc: NatsConnection, link: Link, logger: Logger): Promise<void> {
  for await (const status of nc.status()) {
    if (status.type === 'disconnect') {
      logger.warn({ offersInFlight: link.offers }, 'NATS connection lost; the runs in flight will be offered again');
      link.connected = false;
      link.events.emit('disconnect');
    } else if (status.type === 'reconnect') {
      link.connected = true;
      link.events.emit('reconnect');
    }
  }
}

/** How the request ended, or why it was given up: its connection lost, or no agent took it. */
async function request(
  { link, registry, takenWithinMs }: { link: Link; registry: AgentRegistry | undefined; takenWithinMs: number },
  job: AuditJob,
  timeoutMs: number,
  requestId: string,
): Promise<RequestEnd | { lost: true } | { untaken: true }> {
  const headers = natsHeaders();
  headers.set(HEADERS.requestId, requestId);
  let onDisconnect = () => {};
  const ended = new AbortController();
  // This gateway reads two-part replies: the run's digest, and its result kept as sent.
  const request = link.inbox.request(
    auditSubject(job.location),
    encodeJob({ ...job, digest: true, plainDigest: true }),
    {
      headers,
      timeoutMs,
      signal: ended.signal,
    },
  );
  const lost = new Promise<{ lost: true }>((resolve) => {
    onDisconnect = () => resolve({ lost: true });
    link.events.once('disconnect', onDisconnect);
  });
  // An agent that took the job after all, and answers late, finds no one waiting.
  const untaken = registry?.confirmsTakes(job.location)
    ? registry
        .taken(job.location, job.jobId, Math.min(takenWithinMs, timeoutMs), ended.signal)
        .then((taken) => (taken ? never() : { untaken: true as const }))
    : never();
  return Promise.race([request, lost, untaken]).finally(() => {
    link.events.off('disconnect', onDisconnect);
    ended.abort(OFFER_SETTLED);
  });
}

/** The outcome of an offer that got no reply. */
function unanswered(
  end: Exclude<RequestEnd, { reply: unknown }> | { lost: true } | { untaken: true },
  job: AuditJob,
  { timeoutMs, requestId, takenWithinMs }: { timeoutMs: number; requestId: string; takenWithinMs: number },
  logger: Logger,
): RunOutcome {
  if ('noResponders' in end)
    return { ok: false, error: { code: 'NO_RESPONDERS', message: `no agent serves ${job.location}` } };
  if ('timedOut' in end)
    return { ok: false, error: { code: 'TIMEOUT', message: `no reply from ${job.location} within ${timeoutMs} ms` } };
  if ('untaken' in end) {
    logger.warn(
      { jobId: job.jobId, requestId, location: job.location, waitedMs: takenWithinMs },
      'no agent took an offered job; offering it again',
    );
    return {
      ok: false,
      error: { code: 'UNTAKEN', message: `no agent of ${job.location} took the job within ${takenWithinMs} ms` },
    };
  }
  if ('failed' in end) {
    logger.error({ err: end.failed, jobId: job.jobId, requestId }, 'dispatch failed');
    return { ok: false, error: { code: 'INTERNAL', message: `dispatch failed: ${end.failed.message}` } };
  }
  return {
    ok: false,
    error: { code: 'DISCONNECTED', message: `the reply from ${job.location} was lost with the NATS connection` },
  };
}

/** An agent's reply as the run's outcome: read, held to its job, or refused. */
async function readReply(reply: Msg, job: AuditJob, requestId: string, logger: Logger): Promise<RunOutcome> {
  // The agent's id, as it claims it, names the agent in what the run failed of; only a
  // well-formed id is repeated (agents are run by other operators).
  const claimed = agentIdSchema.safeParse(reply.headers?.get(HEADERS.agentId));
  const agent = claimed.success ? claimed.data : undefined;
  const from = agent ? `agent ${agent} of ${job.location}` : `an agent of ${job.location}`;
  const refused = (why: string): RunOutcome => {
    logger.warn(
      { jobId: job.jobId, requestId, location: job.location, agentId: agent, reason: why },
      'refused an agent reply',
    );
    return {
      ok: false,
      ...(agent ? { agentId: agent } : {}),
      error: { code: 'BAD_REPLY', message: `${from} sent a reply that was refused: ${why}` },
    };
  };
  let decoded: ReceivedReply;
  try {
    decoded = await receiveReply(reply.data, {
      contentEncoding: reply.headers?.get(HEADERS.contentEncoding) || undefined,
      parts: reply.headers?.get(HEADERS.replyParts) || undefined,
      digestEncoding: reply.headers?.get(HEADERS.digestEncoding) || undefined,
      stepParts: reply.headers?.get(HEADERS.stepParts) || undefined,
    });
  } catch (error) {
    // Every way decodeReply refuses a reply is a ReplyRefused; anything else still becomes an
    // outcome, since an offer never throws.
    return refused(error instanceof ReplyRefused ? error.message : 'it could not be read');
  }
  const mismatch = replyMismatch(job, decoded);
  if (mismatch) return refused(`it answers with ${mismatch}`);
  return replyOutcome(decoded);
}

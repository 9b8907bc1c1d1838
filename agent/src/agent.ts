import { randomBytes } from 'node:crypto';
import type { Msg, NatsConnection, Subscription } from '@nats-io/nats-core';
import { headers as natsHeaders } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  agentAnnounceSubject,
  AGENT_DISCOVER_SUBJECT,
  auditQueueGroup,
  auditSubject,
  decodeJob,
  digestRun,
  encodeAnnouncement,
  encodeReply,
  encodeReplyParts,
  MAX_ANNOUNCED_RUNNING,
  HEADERS,
  PERFWATCH_VERSION,
  shrinkLighthouseResult,
  type AuditJob,
  type AuditReply,
  type RunDigest,
  type Location,
  type SecurityFacts,
} from '@perfwatch/common';
import type { AuditRunner } from './lighthouse-runner.ts';
import type { RunObserver } from './metrics.ts';
import { createJobExecutor } from './job-executor.ts';

export interface AgentDeps {
  nc: NatsConnection;
  location: Location;
  /** Must take `capacity` runs at once (a runner pool for more than one). */
  runner: AuditRunner;
  logger: Logger;
  agentId: string;
  /** Runs at once; at capacity the agent leaves the queue group until a run ends. */
  capacity?: number;
  /** How often the agent says it is there (it also does on every change of how busy it is). */
  announceIntervalMs?: number;
  keepScreenshots?: boolean;
  /** Looks at the final URL's transport and headers after a run; absent: no SECURITY facts. */
  probeSecurity?: (url: string) => Promise<SecurityFacts>;
  /** Told of every run and how it ended (metrics). */
  observer?: RunObserver;
  /** Runs between two measurements of the benchmark index (PERFWATCH_CALIBRATE_EVERY_RUNS). */
  calibrateEveryRuns?: number;
  /**
   * How a reply becomes bytes; unset, encodeReplyBytes. Benchmarks pass their own: replies of
   * the kind agents before v1.5 sent, and precomputed bytes, so that their stand-in agents do
   * not take the CPU of the gateway they measure.
   */
  encodeReply?: ReplyEncoder;
}

/**
 * How the job asked to be answered: the whole reply gzipped (before v1.5), in two parts with
 * the digest gzipped (v1.5), or with the digest as plain JSON (v1.6).
 */
export type ReplyShape = 'whole' | 'parts' | 'parts, plain digest';

export function replyShapeOf(job: AuditJob): ReplyShape {
  if (job.digest !== true) return 'whole';
  return job.plainDigest === true ? 'parts, plain digest' : 'parts';
}

/** A reply's bytes, in two parts (`parts`, the first one's length) when the shape asks and the reply is a result. */
export type ReplyEncoder = (
  body: AuditReply,
  shape: ReplyShape,
  digest?: RunDigest,
) => Promise<{ data: Uint8Array; parts: number | null }>;

/** The reply's bytes, as the job asked for them. */
export const encodeReplyBytes: ReplyEncoder = async (body, shape, digest) => {
  if (shape === 'whole' || !body.ok) return { data: await encodeReply(body), parts: null };
  return encodeReplyParts(body, digest, { plainDigest: shape === 'parts, plain digest' });
};

export interface Agent {
  readonly location: Location;
  /** Runs going on now. */
  readonly busy: number;
  readonly capacity: number;
  /** False once the agent is stopping: it takes no more work. */
  readonly accepting: boolean;
  /** Says goodbye, stops taking work, lets the current runs finish, releases its subscriptions. */
  stop(): Promise<void>;
}

/**
 * Serves one location: takes audit jobs from the location's subject in a queue group shared
 * with the location's other agents, runs up to `capacity` of them at once, replies with each
 * result, and announces itself so gateways know the location is served and how busy it is.
 */
export function startAgent({
  nc,
  location,
  runner,
  logger,
  agentId,
  capacity = 1,
  announceIntervalMs = 5_000,
  keepScreenshots = false,
  probeSecurity,
  observer,
  calibrateEveryRuns,
  encodeReply: encoded = encodeReplyBytes,
}: AgentDeps): Agent {
  const log = logger.child({ location, agentId });
  // Binds this process to its agent id at the gateways (agent-presence.ts): only the process
  // that knows it can update or retire the id.
  const instance = randomBytes(18).toString('base64url');
  const execute = createJobExecutor({
    location,
    runner,
    logger: log,
    agentId,
    keepScreenshots,
    probeSecurity,
    observer,
    ...(calibrateEveryRuns ? { calibrateEveryRuns } : {}),
  });
  const subject = auditSubject(location);
  let stopping = false;
  let busy = 0;
  const running = new Set<Promise<void>>();
  // Announced, so a gateway knows its offer arrived (agent-presence.ts, `running`).
  const runningJobs = new Set<string>();
  let jobs: Subscription | null = null;
  let leaving: Promise<void> = Promise.resolve();

  // At capacity the agent leaves the queue group (drain: jobs already on their way are still
  // answered), so NATS gives new jobs to agents that can start them, and a gateway that finds
  // no responder while agents are announced knows they are busy, not gone. A job that slips
  // in anyway is handed back at once (AGENT_BUSY) rather than queued behind a run here.
  function listen(): void {
    if (jobs || stopping || busy >= capacity || nc.isClosed() || nc.isDraining()) return;
    jobs = nc.subscribe(subject, { queue: auditQueueGroup(location), callback: (_error, msg) => accept(msg) });
  }

  function leaveQueueGroup(): void {
    const sub = jobs;
    jobs = null;
    if (sub)
      leaving = leaving
        .then(() => sub.drain())
        .catch((error: unknown) => log.warn({ err: error }, 'could not leave the queue group cleanly'));
  }

  function accept(msg: Msg): void {
    const requestId = msg.headers?.get(HEADERS.requestId) || undefined;
    let job: AuditJob;
    try {
      job = decodeJob(msg.data);
    } catch (error) {
      log.warn({ requestId, err: error }, 'rejected a malformed job');
      void reply(msg, {
        ok: false,
        agentId,
        error: { code: 'BAD_JOB', message: `malformed job: ${(error as Error).message}`, retryable: false },
      });
      return;
    }
    const handBack = stopping
      ? { code: 'AGENT_SHUTTING_DOWN', message: 'agent is shutting down' }
      : busy >= capacity
        ? { code: 'AGENT_BUSY', message: `agent ${agentId} is running ${busy} audits, its capacity` }
        : job.excludeAgents?.includes(agentId)
          ? { code: 'AGENT_EXCLUDED', message: `job ${job.jobId} asks for another agent than ${agentId}` }
          : null;
    if (handBack) {
      void reply(msg, { ok: false, jobId: job.jobId, agentId, error: { ...handBack, retryable: true } });
      return;
    }
    busy++;
    runningJobs.add(job.jobId);
    if (busy >= capacity) leaveQueueGroup();
    announceSoon();
    const done = handle(msg, job, requestId)
      .catch((error: unknown) => log.error({ err: error, jobId: job.jobId }, 'could not reply to a job'))
      .finally(() => {
        running.delete(done);
        runningJobs.delete(job.jobId);
        busy--;
        listen();
        announceSoon();
      });
    running.add(done);
  }

  async function handle(msg: Msg, job: AuditJob, requestId: string | undefined): Promise<void> {
    await reply(msg, await execute(job, requestId), replyShapeOf(job));
  }

  async function reply(msg: Msg, body: AuditReply, shape: ReplyShape = 'whole'): Promise<void> {
    const h = natsHeaders();
    h.set(HEADERS.contentEncoding, 'gzip');
    h.set(HEADERS.agentId, agentId);
    const requestId = msg.headers?.get(HEADERS.requestId);
    if (requestId) h.set(HEADERS.requestId, requestId);
    let { data, parts } = await encoded(body, shape);
    // Headers and protocol framing share the payload limit; keep a margin for them.
    const maxPayload = (nc.info?.max_payload ?? 1024 * 1024) - 4096;
    if (data.byteLength > maxPayload && body.ok) {
      log.warn({ bytes: data.byteLength, maxPayload }, 'result exceeds the NATS payload limit; shrinking it');
      // The digest stays the whole result's: only what is kept of it shrinks.
      ({ data, parts } = await encoded(
        { ok: true, result: { ...body.result, lhr: shrinkLighthouseResult(body.result.lhr) } },
        shape,
        digestRun(body.result.lhr),
      ));
    }
    if (data.byteLength > maxPayload) {
      parts = null;
      log.error({ bytes: data.byteLength, maxPayload }, 'result exceeds the NATS payload limit');
      data = await encodeReply({
        ok: false,
        ...(body.ok ? { jobId: body.result.jobId } : {}),
        agentId,
        error: {
          code: 'RESULT_TOO_LARGE',
          message: `compressed result is ${data.byteLength} bytes; the NATS server allows ${maxPayload}`,
          retryable: false,
        },
      });
    }
    if (parts !== null) {
      h.set(HEADERS.replyParts, String(parts));
      if (shape === 'parts, plain digest') h.set(HEADERS.digestEncoding, 'identity');
    }
    if (!msg.respond(data, { headers: h })) log.warn('job had no reply subject; result dropped by the sender');
  }

  /**
   * One announcement for every take and finish of this turn of the event loop, sent before the
   * next: an agent of capacity 25 taking a burst of jobs said so once per job, and gateways read
   * every announcement (bench/results.md, dispatch at scale).
   */
  let announcing = false;
  function announceSoon(): void {
    if (announcing) return;
    announcing = true;
    setImmediate(() => {
      announcing = false;
      announce();
    });
  }

  function announce(): void {
    if (nc.isClosed()) return;
    try {
      nc.publish(
        agentAnnounceSubject(location),
        encodeAnnouncement({
          agentId,
          instance,
          location,
          version: PERFWATCH_VERSION,
          capacity,
          busy,
          running: [...runningJobs].reverse().slice(0, MAX_ANNOUNCED_RUNNING),
          state: stopping ? 'stopping' : 'ready',
          intervalMs: announceIntervalMs,
        }),
      );
    } catch (error) {
      // A connection that is draining refuses publishes; the gateway's expiry covers this.
      log.debug({ err: error }, 'could not announce');
    }
  }

  const discover = nc.subscribe(AGENT_DISCOVER_SUBJECT, { callback: () => announce() });
  const heartbeat = setInterval(announce, announceIntervalMs);
  heartbeat.unref();
  listen();
  announce();
  log.info({ subject, capacity }, 'agent serving location');

  return {
    location,
    capacity,
    get busy() {
      return busy;
    },
    get accepting() {
      return !stopping;
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      clearInterval(heartbeat);
      announce();
      leaveQueueGroup();
      await leaving;
      while (running.size > 0) await Promise.allSettled([...running]);
      if (!nc.isClosed()) await discover.drain().catch(() => undefined);
      log.info('agent stopped');
    },
  };
}

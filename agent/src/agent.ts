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
import type { PageRunner } from './lighthouse-runner.ts';
import type { RunObserver } from './metrics.ts';
import { agentDefaults } from './config.ts';
import { createArtifactCache } from './artifact-cache.ts';
import { startArtifactSender, type ArtifactSender } from './artifact-sender.ts';
import { createJobExecutor } from './job-executor.ts';

export interface AgentDeps {
  nc: NatsConnection;
  location: Location;
  /** Must take `capacity` runs at once (a runner pool for more than one). */
  runner: PageRunner;
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
  /** Keeps runs' requests and traces for the gateway to pull (docs/artifacts.md); default true. */
  keepArtifacts?: boolean;
}

/**
 * How the job asked to be answered: the whole reply gzipped (before v1.5), in two parts with
 * the digest gzipped (v1.5), or with the digest as plain JSON (v1.6).
 */
type ReplyShape = 'whole' | 'parts' | 'parts, plain digest';

function replyShapeOf(job: AuditJob): ReplyShape {
  if (job.digest !== true) return 'whole';
  return job.plainDigest === true ? 'parts, plain digest' : 'parts';
}

/** A reply's bytes, in two parts (`parts`, the first one's length) when the shape asks and the reply is a result. */
export type ReplyEncoder = (body: AuditReply, shape: ReplyShape, digest?: RunDigest) => Promise<EncodedReply>;

/** A reply's bytes; `parts` and `stepParts` as the Perfwatch-Reply-Parts and Perfwatch-Step-Parts headers say. */
interface EncodedReply {
  data: Uint8Array;
  parts: number | null;
  stepParts?: string;
}

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
export function startAgent(deps: AgentDeps): Agent {
  const agent = new NatsAgent(deps);
  agent.start();
  return agent;
}

/** Why a well-formed job is handed back rather than run here, or null to run it. */
function handBackReason(
  job: AuditJob,
  { stopping, busy, capacity, agentId }: { stopping: boolean; busy: number; capacity: number; agentId: string },
): { code: string; message: string } | null {
  if (stopping) return { code: 'AGENT_SHUTTING_DOWN', message: 'agent is shutting down' };
  if (busy >= capacity) return { code: 'AGENT_BUSY', message: `agent ${agentId} is making ${busy} runs, its capacity` };
  if (job.excludeAgents?.includes(agentId))
    return { code: 'AGENT_EXCLUDED', message: `job ${job.jobId} asks for another agent than ${agentId}` };
  return null;
}

class NatsAgent implements Agent {
  readonly location: Location;
  readonly capacity: number;
  readonly #deps: AgentDeps;
  readonly #log: Logger;
  readonly #encoded: ReplyEncoder;
  readonly #announceIntervalMs: number;
  // Binds this process to its agent id at the gateways (agent-presence.ts): only the process
  // that knows it can update or retire the id.
  readonly #instance = randomBytes(18).toString('base64url');
  readonly #execute: ReturnType<typeof createJobExecutor>;
  readonly #subject: string;
  #stopping = false;
  #busy = 0;
  readonly #running = new Set<Promise<void>>();
  // Announced, so a gateway knows its offer arrived (agent-presence.ts, `running`).
  readonly #runningJobs = new Set<string>();
  #jobs: Subscription | null = null;
  #leaving: Promise<void> = Promise.resolve();
  #announcing = false;
  #discover: Subscription | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #artifacts = createArtifactCache();
  #sender: ArtifactSender | undefined;

  constructor(deps: AgentDeps) {
    const { location, runner, logger, agentId, keepScreenshots, probeSecurity, observer } = deps;
    this.#deps = deps;
    this.location = location;
    this.capacity = deps.capacity ?? agentDefaults.PERFWATCH_CAPACITY;
    this.#announceIntervalMs = deps.announceIntervalMs ?? agentDefaults.PERFWATCH_ANNOUNCE_INTERVAL_MS;
    this.#encoded = deps.encodeReply ?? encodeReplyBytes;
    this.#log = logger.child({ location, agentId });
    this.#subject = auditSubject(location);
    this.#execute = createJobExecutor({
      location,
      runner,
      logger: this.#log,
      agentId,
      keepScreenshots,
      probeSecurity,
      observer,
      ...(deps.calibrateEveryRuns ? { calibrateEveryRuns: deps.calibrateEveryRuns } : {}),
      ...(deps.keepArtifacts === false ? {} : { artifacts: this.#artifacts }),
    });
  }

  get busy(): number {
    return this.#busy;
  }

  get accepting(): boolean {
    return !this.#stopping;
  }

  start(): void {
    const { nc } = this.#deps;
    this.#discover = nc.subscribe(AGENT_DISCOVER_SUBJECT, { callback: () => this.#announce() });
    this.#heartbeat = setInterval(() => this.#announce(), this.#announceIntervalMs);
    this.#heartbeat.unref();
    if (this.#deps.keepArtifacts !== false)
      this.#sender = startArtifactSender({
        nc,
        location: this.location,
        agentId: this.#deps.agentId,
        cache: this.#artifacts,
        logger: this.#log,
      });
    this.#listen();
    this.#announce();
    this.#log.info({ subject: this.#subject, capacity: this.capacity }, 'agent serving location');
  }

  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    clearInterval(this.#heartbeat);
    this.#announce();
    this.#leaveQueueGroup();
    await this.#leaving;
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
    // Runs kept for a pull are not waited for: only transfers already going on finish.
    if (!this.#deps.nc.isClosed()) await this.#sender?.stop();
    if (!this.#deps.nc.isClosed()) await this.#discover?.drain().catch(() => undefined);
    this.#log.info('agent stopped');
  }

  // At capacity the agent leaves the queue group (drain: jobs already on their way are still
  // answered), so NATS gives new jobs to agents that can start them, and a gateway that finds
  // no responder while agents are announced knows they are busy, not gone. A job that slips
  // in anyway is handed back at once (AGENT_BUSY) rather than queued behind a run here.
  #listen(): void {
    const { nc, location } = this.#deps;
    if (this.#jobs || this.#stopping || this.#busy >= this.capacity || nc.isClosed() || nc.isDraining()) return;
    this.#jobs = nc.subscribe(this.#subject, {
      queue: auditQueueGroup(location),
      callback: (_error, msg) => this.#accept(msg),
    });
  }

  #leaveQueueGroup(): void {
    const sub = this.#jobs;
    this.#jobs = null;
    if (sub)
      this.#leaving = this.#leaving
        .then(() => sub.drain())
        .catch((error: unknown) => this.#log.warn({ err: error }, 'could not leave the queue group cleanly'));
  }

  #accept(msg: Msg): void {
    const { agentId } = this.#deps;
    const requestId = msg.headers?.get(HEADERS.requestId) || undefined;
    let job: AuditJob;
    try {
      job = decodeJob(msg.data);
    } catch (error) {
      this.#log.warn({ requestId, err: error }, 'rejected a malformed job');
      void this.#reply(msg, {
        ok: false,
        agentId,
        error: { code: 'BAD_JOB', message: `malformed job: ${(error as Error).message}`, retryable: false },
      });
      return;
    }
    const handBack = handBackReason(job, {
      stopping: this.#stopping,
      busy: this.#busy,
      capacity: this.capacity,
      agentId,
    });
    if (handBack) {
      void this.#reply(msg, { ok: false, jobId: job.jobId, agentId, error: { ...handBack, retryable: true } });
      return;
    }
    this.#run(msg, job, requestId);
  }

  #run(msg: Msg, job: AuditJob, requestId: string | undefined): void {
    this.#busy++;
    this.#runningJobs.add(job.jobId);
    if (this.#busy >= this.capacity) this.#leaveQueueGroup();
    this.#announceSoon();
    const done = this.#handle(msg, job, requestId)
      .catch((error: unknown) => this.#log.error({ err: error, jobId: job.jobId }, 'could not reply to a job'))
      .finally(() => {
        this.#running.delete(done);
        this.#runningJobs.delete(job.jobId);
        this.#busy--;
        this.#listen();
        this.#announceSoon();
      });
    this.#running.add(done);
  }

  async #handle(msg: Msg, job: AuditJob, requestId: string | undefined): Promise<void> {
    await this.#reply(msg, await this.#execute(job, requestId), replyShapeOf(job));
  }

  async #reply(msg: Msg, body: AuditReply, shape: ReplyShape = 'whole'): Promise<void> {
    const { nc, agentId } = this.#deps;
    // Headers and protocol framing share the payload limit; keep a margin for them.
    const maxPayload = (nc.info?.max_payload ?? 1024 * 1024) - 4096;
    const { data, parts, stepParts } = await this.#fitted(body, shape, maxPayload);
    const h = natsHeaders();
    h.set(HEADERS.contentEncoding, 'gzip');
    h.set(HEADERS.agentId, agentId);
    const requestId = msg.headers?.get(HEADERS.requestId);
    if (requestId) h.set(HEADERS.requestId, requestId);
    if (parts !== null) {
      h.set(HEADERS.replyParts, String(parts));
      if (shape === 'parts, plain digest') h.set(HEADERS.digestEncoding, 'identity');
      if (stepParts !== undefined) h.set(HEADERS.stepParts, stepParts);
    }
    if (!msg.respond(data, { headers: h })) this.#log.warn('job had no reply subject; result dropped by the sender');
  }

  /** The reply's bytes within `maxPayload`: as they are, with the result shrunk, or RESULT_TOO_LARGE. */
  async #fitted(body: AuditReply, shape: ReplyShape, maxPayload: number): Promise<EncodedReply> {
    let encoded = await this.#encoded(body, shape);
    if (encoded.data.byteLength > maxPayload && body.ok) {
      this.#log.warn(
        { bytes: encoded.data.byteLength, maxPayload },
        'result exceeds the NATS payload limit; shrinking it',
      );
      // The digests stay the whole results': only what is kept of them shrinks.
      const { lhr, steps } = body.result;
      const shrunk = {
        ...body.result,
        lhr: shrinkLighthouseResult(lhr),
        ...(steps ? { steps: steps.map((step) => ({ ...step, lhr: shrinkLighthouseResult(step.lhr) })) } : {}),
      };
      encoded = await this.#encoded({ ok: true, result: shrunk }, shape, digestRun(lhr));
    }
    const { data } = encoded;
    if (data.byteLength <= maxPayload) return encoded;
    this.#log.error({ bytes: data.byteLength, maxPayload }, 'result exceeds the NATS payload limit');
    const refusal = await encodeReply({
      ok: false,
      ...(body.ok ? { jobId: body.result.jobId } : {}),
      agentId: this.#deps.agentId,
      error: {
        code: 'RESULT_TOO_LARGE',
        message: `compressed result is ${data.byteLength} bytes; the NATS server allows ${maxPayload}`,
        retryable: false,
      },
    });
    return { data: refusal, parts: null };
  }

  /**
   * One announcement for every take and finish of this turn of the event loop, sent before the
   * next: an agent of capacity 25 taking a burst of jobs said so once per job, and gateways read
   * every announcement (bench/results.md, dispatch at scale).
   */
  #announceSoon(): void {
    if (this.#announcing) return;
    this.#announcing = true;
    setImmediate(() => {
      this.#announcing = false;
      this.#announce();
    });
  }

  #announce(): void {
    const { nc, location, agentId } = this.#deps;
    if (nc.isClosed()) return;
    try {
      nc.publish(
        agentAnnounceSubject(location),
        encodeAnnouncement({
          agentId,
          instance: this.#instance,
          location,
          version: PERFWATCH_VERSION,
          capacity: this.capacity,
          busy: this.#busy,
          running: [...this.#runningJobs].reverse().slice(0, MAX_ANNOUNCED_RUNNING),
          state: this.#stopping ? 'stopping' : 'ready',
          intervalMs: this.#announceIntervalMs,
        }),
      );
    } catch (error) {
      // A connection that is draining refuses publishes; the gateway's expiry covers this.
      this.#log.debug({ err: error }, 'could not announce');
    }
  }
}

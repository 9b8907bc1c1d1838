import type { Msg, NatsConnection, Subscription } from '@nats-io/nats-core';
import { headers as natsHeaders } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  auditQueueGroup,
  auditSubject,
  decodeJob,
  encodeReply,
  HEADERS,
  shrinkLighthouseResult,
  trimLighthouseResult,
  type AuditJob,
  type AuditReply,
  type Location,
  type SecurityFacts,
} from '@perfwatch/common';
import type { AuditRunner } from './lighthouse-runner.ts';
import { RunFailure } from './run-failure.ts';

export interface AgentDeps {
  nc: NatsConnection;
  location: Location;
  runner: AuditRunner;
  logger: Logger;
  agentId: string;
  keepScreenshots?: boolean;
  /** Looks at the final URL's transport and headers after a run; absent: no SECURITY facts. */
  probeSecurity?: (url: string) => Promise<SecurityFacts>;
}

export interface Agent {
  readonly location: Location;
  /** Stops taking work, lets the current run finish, releases the subscription. */
  stop(): Promise<void>;
}

/**
 * Serves one location: takes audit jobs from the location's subject in a queue group shared
 * with the location's other agents, runs them one at a time, replies with the result.
 */
export function startAgent({ nc, location, runner, logger, agentId, keepScreenshots = false, probeSecurity }: AgentDeps): Agent {
  const log = logger.child({ location, agentId });
  const subject = auditSubject(location);
  const sub: Subscription = nc.subscribe(subject, { queue: auditQueueGroup(location) });
  let stopping = false;
  let current: Promise<void> | null = null;

  // One run at a time. A job that arrives while a run is going on is handed back at once
  // (AGENT_BUSY), so the gateway offers it again and the queue group can give it to an idle
  // agent of the location, instead of it waiting here behind this run.
  const loop = (async () => {
    for await (const msg of sub) {
      if (stopping) {
        await reply(msg, { ok: false, error: { code: 'AGENT_SHUTTING_DOWN', message: 'agent is shutting down', retryable: true } });
      } else if (current) {
        await reply(msg, { ok: false, error: { code: 'AGENT_BUSY', message: `agent ${agentId} is running another audit`, retryable: true } });
      } else {
        current = handle(msg).finally(() => {
          current = null;
        });
      }
    }
  })();

  async function handle(msg: Msg): Promise<void> {
    const requestId = msg.headers?.get(HEADERS.requestId) || undefined;
    let job: AuditJob;
    try {
      job = decodeJob(msg.data);
    } catch (error) {
      log.warn({ requestId, err: error }, 'rejected a malformed job');
      await reply(msg, { ok: false, error: { code: 'BAD_JOB', message: `malformed job: ${(error as Error).message}`, retryable: false } });
      return;
    }
    if (job.location !== location) {
      await reply(msg, { ok: false, jobId: job.jobId, error: { code: 'BAD_JOB', message: `job for ${job.location} sent to ${location}`, retryable: false } });
      return;
    }
    const jobLog = log.child({ requestId, jobId: job.jobId, device: job.device, runIndex: job.runIndex });
    const startedAt = new Date();
    try {
      const { lhr, lighthouseMs } = await runner.run({ url: job.url, device: job.device, timeoutMs: job.timeoutMs });
      jobLog.info({ lighthouseMs: Math.round(lighthouseMs), target: { url: job.url } }, 'run done');
      const security = probeSecurity
        ? await probeSecurity(lhr.finalDisplayedUrl).catch((error: unknown) => {
            jobLog.warn({ err: { message: (error as Error).message }, target: { url: lhr.finalDisplayedUrl } }, 'security probe failed; no SECURITY facts for this run');
            return undefined;
          })
        : undefined;
      await reply(msg, {
        ok: true,
        result: {
          jobId: job.jobId,
          agentId,
          location,
          device: job.device,
          runIndex: job.runIndex,
          startedAt: startedAt.toISOString(),
          lighthouseMs,
          lhr: trimLighthouseResult(lhr, { keepScreenshots }),
          ...(security ? { security } : {}),
        },
      });
    } catch (error) {
      const failure = error instanceof RunFailure ? error : new RunFailure('INTERNAL', (error as Error).message, true, { cause: error });
      jobLog.warn({ code: failure.code, err: error, target: { url: job.url } }, 'run failed');
      await reply(msg, { ok: false, jobId: job.jobId, error: failure.toFailure() });
    }
  }

  async function reply(msg: Msg, body: AuditReply): Promise<void> {
    const h = natsHeaders();
    h.set(HEADERS.contentEncoding, 'gzip');
    const requestId = msg.headers?.get(HEADERS.requestId);
    if (requestId) h.set(HEADERS.requestId, requestId);
    let data = await encodeReply(body);
    // Headers and protocol framing share the payload limit; keep a margin for them.
    const maxPayload = (nc.info?.max_payload ?? 1024 * 1024) - 4096;
    if (data.byteLength > maxPayload && body.ok) {
      log.warn({ bytes: data.byteLength, maxPayload }, 'result exceeds the NATS payload limit; shrinking it');
      data = await encodeReply({ ok: true, result: { ...body.result, lhr: shrinkLighthouseResult(body.result.lhr) } });
    }
    if (data.byteLength > maxPayload) {
      log.error({ bytes: data.byteLength, maxPayload }, 'result exceeds the NATS payload limit');
      data = await encodeReply({
        ok: false,
        ...(body.ok ? { jobId: body.result.jobId } : {}),
        error: { code: 'RESULT_TOO_LARGE', message: `compressed result is ${data.byteLength} bytes; the NATS server allows ${maxPayload}`, retryable: false },
      });
    }
    if (!msg.respond(data, { headers: h })) log.warn('job had no reply subject; result dropped by the sender');
  }

  log.info({ subject }, 'agent serving location');

  return {
    location,
    async stop() {
      stopping = true;
      await sub.drain();
      await loop;
      await current;
      log.info('agent stopped');
    },
  };
}

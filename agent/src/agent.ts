import type { Msg, NatsConnection, Subscription } from '@nats-io/nats-core';
import { headers as natsHeaders } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  auditQueueGroup,
  auditSubject,
  decodeJob,
  encodeReply,
  HEADERS,
  trimLighthouseResult,
  type AuditJob,
  type AuditReply,
  type Location,
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
export function startAgent({ nc, location, runner, logger, agentId, keepScreenshots = false }: AgentDeps): Agent {
  const log = logger.child({ location, agentId });
  const subject = auditSubject(location);
  const sub: Subscription = nc.subscribe(subject, { queue: auditQueueGroup(location) });
  let stopping = false;

  const loop = (async () => {
    for await (const msg of sub) {
      if (stopping) {
        // Delivered before the drain took effect: hand it back at once so the gateway can
        // try another agent instead of waiting for this one.
        await reply(msg, { ok: false, error: { code: 'AGENT_SHUTTING_DOWN', message: 'agent is shutting down', retryable: true } });
        continue;
      }
      await handle(msg);
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
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
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
      log.info('agent stopped');
    },
  };
}

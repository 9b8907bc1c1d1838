import pRetry from 'p-retry';
import type { NatsConnection } from '@nats-io/nats-core';
import { errors as natsErrors, headers as natsHeaders } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { auditSubject, decodeReply, encodeJob, HEADERS, type AuditErrorCode, type AuditJob, type AuditRunResult } from '@perfwatch/common';

/**
 * Failures the gateway observes on the transport, beside the ones agents report (an agent of
 * a later v1 version may report a code this gateway does not know, hence `string`).
 */
export type DispatchErrorCode = AuditErrorCode | 'NO_RESPONDERS' | 'TIMEOUT' | 'BAD_REPLY' | (string & {});

export type RunOutcome =
  | { ok: true; result: AuditRunResult }
  | { ok: false; error: { code: DispatchErrorCode; message: string; retryable: boolean } };

export interface Dispatcher {
  dispatch(job: AuditJob, options: { timeoutMs: number; requestId: string }): Promise<RunOutcome>;
}

/**
 * Sends one audit job as a NATS request on its location's subject and turns whatever comes
 * back, or does not, into a RunOutcome. Never throws: every way a run can fail is a value.
 */
/** Agents that hand a job back this way are offered it again, until the reply deadline. */
const OFFER_AGAIN = new Set(['AGENT_BUSY', 'AGENT_SHUTTING_DOWN']);

class OfferAgain extends Error {
  readonly outcome: RunOutcome;
  constructor(outcome: RunOutcome) {
    super('offer again');
    this.outcome = outcome;
  }
}

export function createNatsDispatcher({ nc, logger, offerAgainMs = { min: 100, max: 1_000 } }: { nc: NatsConnection; logger: Logger; offerAgainMs?: { min: number; max: number } }): Dispatcher {
  /**
   * Offers a job to the location's queue group until an agent takes it: busy agents hand jobs
   * back at once, so a free agent of the location gets the run rather than a busy one queueing it.
   */
  async function dispatch(job: AuditJob, { timeoutMs, requestId }: { timeoutMs: number; requestId: string }): Promise<RunOutcome> {
    const deadline = Date.now() + timeoutMs;
    try {
      return await pRetry(
        async () => {
          const outcome = await offer(job, { timeoutMs: Math.max(1, deadline - Date.now()), requestId });
          if (!outcome.ok && OFFER_AGAIN.has(outcome.error.code) && Date.now() < deadline) throw new OfferAgain(outcome);
          return outcome;
        },
        { retries: Number.POSITIVE_INFINITY, minTimeout: offerAgainMs.min, maxTimeout: offerAgainMs.max, factor: 1.5, randomize: true, maxRetryTime: timeoutMs, shouldRetry: ({ error }) => error instanceof OfferAgain && Date.now() < deadline },
      );
    } catch (error) {
      if (error instanceof OfferAgain) return { ok: false, error: { code: 'TIMEOUT', message: `every agent of ${job.location} stayed busy for ${timeoutMs} ms`, retryable: true } };
      throw error;
    }
  }

  return { dispatch };

  async function offer(job: AuditJob, { timeoutMs, requestId }: { timeoutMs: number; requestId: string }): Promise<RunOutcome> {
    const h = natsHeaders();
    h.set(HEADERS.requestId, requestId);
    let reply;
    try {
      reply = await nc.request(auditSubject(job.location), encodeJob(job), { timeout: timeoutMs, headers: h });
    } catch (error) {
      if (error instanceof natsErrors.RequestError && error.isNoResponders()) {
        return { ok: false, error: { code: 'NO_RESPONDERS', message: `no agent serves ${job.location}`, retryable: true } };
      }
      if (error instanceof natsErrors.TimeoutError || (error instanceof Error && error.cause instanceof natsErrors.TimeoutError)) {
        return { ok: false, error: { code: 'TIMEOUT', message: `no reply from ${job.location} within ${timeoutMs} ms`, retryable: true } };
      }
      logger.error({ err: error, jobId: job.jobId, requestId }, 'dispatch failed');
      return { ok: false, error: { code: 'INTERNAL', message: `dispatch failed: ${(error as Error).message}`, retryable: true } };
    }
    try {
      const decoded = await decodeReply(reply.data, reply.headers?.get(HEADERS.contentEncoding) || undefined);
      return decoded.ok ? { ok: true, result: decoded.result } : { ok: false, error: decoded.error };
    } catch (error) {
      logger.error({ err: error, jobId: job.jobId, requestId }, 'agent reply does not match the v1 contract');
      return { ok: false, error: { code: 'BAD_REPLY', message: `unreadable reply from ${job.location}`, retryable: true } };
    }
  }
}
import {
  digestRun,
  type AuditJob,
  type AuditRunResult,
  type DigestedRunResult,
  type Location,
  type ReceivedReply,
} from '@perfwatch/common';
import { ResultBytes } from '../snapshots/result-bytes.ts';
import { reportedFailure, type RunFailureCode } from './run-failures.ts';

/**
 * A successful run as the gateway holds it: what it reads of the run (its digest) and the
 * result it stores, compressed (result-bytes.ts).
 */
export type ReceivedRun = Omit<DigestedRunResult, 'steps'> & {
  lighthouse: ResultBytes;
  /** A flow's run: each step's digest and result, in the flow's order (the first is the run's own). */
  steps?: ReceivedStep[];
};

/** One step of a flow's run as the gateway holds it. */
export type ReceivedStep = NonNullable<DigestedRunResult['steps']>[number] & { lighthouse: ResultBytes };

export type RunOutcome =
  { ok: true; result: ReceivedRun } | { ok: false; agentId?: string; error: { code: RunFailureCode; message: string } };

export interface DispatchOptions {
  /** How long the run may take from now, waiting for a free agent included. */
  timeoutMs: number;
  requestId: string;
  /** An agent that failed this run: another agent of the location gets it when there is one. */
  avoidAgent?: string;
  /** Whose run it is: when every agent is busy, places go to users fairly (fair-waiting-room.ts). */
  user?: string;
}

/** Whatever carries runs to agents (NATS, or local mode's agents in the gateway's process). */
export interface Dispatcher {
  dispatch(job: AuditJob, options: DispatchOptions): Promise<RunOutcome>;
  /** Runs of a location waiting for an agent with room (every agent was busy when offered). */
  waiting?(location: Location): number;
  /** Resolves when an agent of the location says it has room (one starting, or done with a run), or after `ms`. */
  roomIn?(location: Location, ms: number): Promise<void>;
}

/** A whole run (agents before v1.5, local mode) as the gateway holds it. */
export function receivedRun({ lhr, steps, ...run }: AuditRunResult): ReceivedRun {
  const digest = digestRun(lhr);
  const lighthouse = ResultBytes.fromResult(lhr);
  return {
    ...run,
    digest,
    lighthouse,
    ...(steps
      ? {
          // The first step is the run's own result: digested and held once.
          steps: steps.map(({ lhr: stepLhr, ...step }, i) =>
            i === 0
              ? { ...step, digest, lighthouse }
              : { ...step, digest: digestRun(stepLhr), lighthouse: ResultBytes.fromResult(stepLhr) },
          ),
        }
      : {}),
  };
}

/**
 * An agent's v1 reply as the outcome of its run, whatever transport brought it. A whole result
 * (agents before v1.5, local mode) is digested here, the way a v1.5 agent digests its own.
 */
export function replyOutcome(reply: ReceivedReply): RunOutcome {
  if (reply.ok && 'lighthouseGzip' in reply) {
    const { steps, ...result } = reply.result;
    const { stepGzips } = reply;
    const lighthouse = ResultBytes.fromGzip(reply.lighthouseGzip);
    return {
      ok: true,
      result: {
        ...result,
        lighthouse,
        // The first step's bytes are the run's own (stepGzips[0] is lighthouseGzip): one holder, checked once.
        ...(steps && stepGzips
          ? {
              steps: steps.map((step, i) => ({
                ...step,
                lighthouse: i === 0 ? lighthouse : ResultBytes.fromGzip(stepGzips[i]!),
              })),
            }
          : {}),
      },
    };
  }
  if (reply.ok) return { ok: true, result: receivedRun(reply.result) };
  const error = reportedFailure(reply.error);
  return reply.agentId === undefined ? { ok: false, error } : { ok: false, agentId: reply.agentId, error };
}

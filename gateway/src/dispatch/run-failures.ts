import { AUDIT_ERROR_CODES, type AuditErrorCode } from '@perfwatch/common';

/** Failures the gateway observes on the transport, beside the ones agents report. */
export const TRANSPORT_FAILURE_CODES = [
  /** No agent of the location is subscribed (or every one is at capacity). */
  'NO_RESPONDERS',
  /** No reply within the run's time, or every agent stayed busy that long. */
  'TIMEOUT',
  /** The reply was refused: not the v1 contract, past its bounds, or not the job's. */
  'BAD_REPLY',
  /** The NATS connection was lost with the offer's reply. */
  'DISCONNECTED',
  /** No agent announced that it took the offer (NATS dropped it on the way). */
  'UNTAKEN',
] as const;

export type RunFailureCode = AuditErrorCode | (typeof TRANSPORT_FAILURE_CODES)[number];

/**
 * What is done about a run that failed, by its code; the one place that says it.
 * - `offerAgain`: the run never started (an agent handed the job back, or the offer was lost):
 *   the dispatcher offers it again until the run's reply deadline.
 * - `retryOnce`: the run failed in a way the next attempt may not repeat: the update measures it
 *   once more, on another agent of the location when there is one.
 * - `locationAway`: the location could not be reached (its agents gone, silent, stopping, or no
 *   reply in time): an update with a deadline offers the run again until then.
 * - `repeats`: another attempt would fail the same way (the page's or the job's own failure):
 *   a queued update that got nothing else is not delivered again.
 */
export interface RunFailurePolicy {
  offerAgain: boolean;
  retryOnce: boolean;
  locationAway: boolean;
  repeats: boolean;
}

const policy = (flags: Partial<RunFailurePolicy>): RunFailurePolicy => ({
  offerAgain: false,
  retryOnce: false,
  locationAway: false,
  repeats: false,
  ...flags,
});
/** The page's or the job's own failure. */
const REPEATS = policy({ repeats: true });
const RETRY_ONCE = policy({ retryOnce: true });
/** Handed back, or lost on the way, before it started. */
const NOT_STARTED = policy({ offerAgain: true });
/** Handed back by an agent that is stopping, or lost with the connection: both also say the location is away. */
const NOT_STARTED_AWAY = policy({ offerAgain: true, locationAway: true });
const AWAY = policy({ locationAway: true });

export const RUN_FAILURES = {
  BAD_JOB: REPEATS,
  PAGE_LOAD_FAILED: REPEATS,
  TARGET_REFUSED: REPEATS,
  LOGIN_ORIGIN_MISMATCH: REPEATS,
  FLOW_STEP_FAILED: REPEATS,
  RESULT_TOO_LARGE: REPEATS,
  LIGHTHOUSE_FAILED: RETRY_ONCE,
  BROWSER_FAILED: RETRY_ONCE,
  RUN_TIMEOUT: RETRY_ONCE,
  INTERNAL: RETRY_ONCE,
  BAD_REPLY: RETRY_ONCE,
  AGENT_BUSY: NOT_STARTED,
  AGENT_EXCLUDED: NOT_STARTED,
  UNTAKEN: NOT_STARTED,
  AGENT_SHUTTING_DOWN: NOT_STARTED_AWAY,
  DISCONNECTED: NOT_STARTED_AWAY,
  NO_RESPONDERS: AWAY,
  TIMEOUT: AWAY,
} as const satisfies Record<RunFailureCode, RunFailurePolicy>;

const KNOWN = new Set<string>([...AUDIT_ERROR_CODES, ...TRANSPORT_FAILURE_CODES]);

/**
 * A failure as an agent reported it, in this gateway's codes. An agent of a later v1 version
 * may report a code this gateway does not know: it counts as INTERNAL (tried once more), and
 * its own code stays in the message. Codes never reach metrics' labels unchecked.
 */
export function reportedFailure({ code, message }: { code: string; message: string }): {
  code: RunFailureCode;
  message: string;
} {
  return KNOWN.has(code)
    ? { code: code as RunFailureCode, message }
    : { code: 'INTERNAL', message: `${code.slice(0, 64)}: ${message}` };
}

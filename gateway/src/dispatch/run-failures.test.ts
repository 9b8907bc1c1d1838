import { describe, expect, it } from 'vitest';
import { AUDIT_ERROR_CODES } from '@perfwatch/common';
import { replyOutcome } from './run-outcome.ts';
import { reportedFailure, RUN_FAILURES, TRANSPORT_FAILURE_CODES } from './run-failures.ts';

describe('run failures', () => {
  it('has a policy for every code an agent or the transport reports, and only for those', () => {
    expect(Object.keys(RUN_FAILURES).sort()).toEqual([...AUDIT_ERROR_CODES, ...TRANSPORT_FAILURE_CODES].sort());
    // A failure of the page's own is never tried again in any way.
    for (const code of [
      'PAGE_LOAD_FAILED',
      'TARGET_REFUSED',
      'LOGIN_ORIGIN_MISMATCH',
      'BAD_JOB',
      'RESULT_TOO_LARGE',
    ] as const) {
      expect(RUN_FAILURES[code]).toEqual({ offerAgain: false, retryOnce: false, locationAway: false, repeats: true });
    }
  });

  it('reads a code a later agent invented as INTERNAL, keeping its own code in the message', () => {
    expect(reportedFailure({ code: 'QUANTUM_FLUX', message: 'the page was observed' })).toEqual({
      code: 'INTERNAL',
      message: 'QUANTUM_FLUX: the page was observed',
    });
    expect(reportedFailure({ code: 'PAGE_LOAD_FAILED', message: 'net::ERR_NAME_NOT_RESOLVED' })).toEqual({
      code: 'PAGE_LOAD_FAILED',
      message: 'net::ERR_NAME_NOT_RESOLVED',
    });
    // What a reply says is read through the same door.
    expect(
      replyOutcome({ ok: false, agentId: 'a1', error: { code: 'X'.repeat(64), message: 'm', retryable: false } }),
    ).toEqual({ ok: false, agentId: 'a1', error: { code: 'INTERNAL', message: `${'X'.repeat(64)}: m` } });
  });
});

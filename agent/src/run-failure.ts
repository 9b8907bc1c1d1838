import type { AuditErrorCode, AuditFailure } from '@perfwatch/common';

/** A run that failed in a way the agent can name; becomes an `{ok: false}` reply. */
export class RunFailure extends Error {
  readonly code: AuditErrorCode;
  readonly retryable: boolean;

  constructor(code: AuditErrorCode, message: string, retryable: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RunFailure';
    this.code = code;
    this.retryable = retryable;
  }

  toFailure(): AuditFailure {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

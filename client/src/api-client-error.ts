import type { ErrorEnvelope } from '@perfwatch/common';

/** The API answered with an error envelope (or something that is not the API). */
export class ApiClientError extends Error {
  readonly httpStatus: number;
  readonly envelope: ErrorEnvelope | null;

  constructor(httpStatus: number, envelope: ErrorEnvelope | null, fallback: string) {
    const detail = envelope ? [envelope.message, ...envelope.errors].join(' ') : fallback;
    super(`HTTP ${httpStatus}${envelope ? ` ${envelope.status}` : ''}: ${detail}`);
    this.name = 'ApiClientError';
    this.httpStatus = httpStatus;
    this.envelope = envelope;
  }
}

import { readUpTo } from './bounded-body.ts';

/**
 * A forge's refusal, sorted by what the caller does about it: a rate limit says when to try
 * again, the others say why. Reports to a forge never change a CI job's exit code (the budgets
 * do), so these are printed or retried, never thrown past the report.
 */
export type ForgeErrorKind =
  /** 403 with no requests left, a secondary rate limit, or 429: retry at `retryAt`. */
  | 'rate-limited'
  /** 401: the token is wrong or expired. */
  | 'unauthorized'
  /** 403 otherwise: the token may not do this (scopes, permissions). */
  | 'forbidden'
  /** 404: no such repository, commit or pull request for this token. */
  | 'not-found'
  /** 400, 409, 410 or 422: the forge refused what was sent. */
  | 'rejected'
  /** 5xx, or no answer at all. */
  | 'unavailable';

export class ForgeError extends Error {
  readonly kind: ForgeErrorKind;
  readonly status: number | null;
  readonly retryAt: Date | undefined;

  constructor(kind: ForgeErrorKind, message: string, options: { status?: number | null; retryAt?: Date } = {}) {
    super(message);
    this.name = 'ForgeError';
    this.kind = kind;
    this.status = options.status ?? null;
    this.retryAt = options.retryAt;
  }
}

/** Bytes of an error answer's body read for its message: enough for any forge's error JSON. */
const MAX_ERROR_BODY = 4_096;

/** The forge's own words from an error answer: `message` (and `errors`, `error`), else the text, bounded. */
async function errorText(response: Response): Promise<string> {
  // Only the first bytes: an error page may be of any size.
  const text = (await readUpTo(response, MAX_ERROR_BODY).catch(() => ({ text: '' }))).text.slice(0, MAX_ERROR_BODY);
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const parts = [body['message'], body['error'], body['errors']]
      .filter((part) => part !== undefined)
      .map((part) => (typeof part === 'string' ? part : JSON.stringify(part)));
    if (parts.length > 0) return parts.join(': ').slice(0, 500);
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 500) || response.statusText;
}

/** When a rate-limited request may be tried again, from the headers GitHub, GitLab and Gitea send. */
export function retryAtOf(headers: Headers, now: Date): Date | undefined {
  const retryAfter = Number(headers.get('retry-after'));
  if (headers.get('retry-after') !== null && Number.isFinite(retryAfter))
    return new Date(now.getTime() + retryAfter * 1000);
  for (const name of ['x-ratelimit-reset', 'ratelimit-reset']) {
    const reset = Number(headers.get(name));
    // An epoch in seconds (GitHub, GitLab); a small number is seconds from now (the IETF draft).
    if (headers.get(name) !== null && Number.isFinite(reset))
      return reset > 1e9 ? new Date(reset * 1000) : new Date(now.getTime() + reset * 1000);
  }
  return undefined;
}

/** An answer that is not 2xx, as a ForgeError of the right kind. */
export async function forgeErrorOf(response: Response, what: string, now = new Date()): Promise<ForgeError> {
  const status = response.status;
  const message = `${what}: ${status} ${await errorText(response)}`;
  const remaining = response.headers.get('x-ratelimit-remaining') ?? response.headers.get('ratelimit-remaining');
  const limited = status === 429 || (status === 403 && (remaining === '0' || /rate limit/i.test(message)));
  if (limited) return new ForgeError('rate-limited', message, { status, retryAt: retryAtOf(response.headers, now) });
  if (status === 401) return new ForgeError('unauthorized', message, { status });
  if (status === 403) return new ForgeError('forbidden', message, { status });
  if (status === 404) return new ForgeError('not-found', message, { status });
  if (status >= 500) return new ForgeError('unavailable', message, { status });
  return new ForgeError('rejected', message, { status });
}

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import ms from 'ms';
import { z } from 'zod';

/**
 * API tokens: `pw_` + 32 random bytes in base64url. The first 8 characters after `pw_` are
 * the token's public prefix: the key it is looked up by, and what `revoke-token` takes. Only
 * the SHA-256 digest of the whole token is stored; the digest is compared in constant time.
 */
const TOKEN_PATTERN = /^pw_([A-Za-z0-9_-]{43})$/;
const TOKEN_PREFIX_LENGTH = 8;

export interface IssuedToken {
  token: string;
  prefix: string;
  digest: string;
}

export function issueToken(): IssuedToken {
  const token = `pw_${randomBytes(32).toString('base64url')}`;
  return { token, prefix: tokenPrefix(token)!, digest: tokenDigest(token) };
}

/** The lookup prefix of a well-formed token; null for anything that cannot be a token. */
export function tokenPrefix(token: string): string | null {
  const m = TOKEN_PATTERN.exec(token);
  return m ? m[1]!.slice(0, TOKEN_PREFIX_LENGTH) : null;
}

export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

/** The token carried by an Authorization header value: the raw token or `Bearer <token>`. */
export function tokenFromHeader(value: string): string {
  const trimmed = value.trim();
  const bearer = /^Bearer\s+(\S+)$/i.exec(trimmed);
  return bearer ? bearer[1]! : trimmed;
}

/** An expiry that is not a duration or date, or not in the future. */
export class TokenExpiryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenExpiryError';
  }
}

const isoDate = z.iso.date();
const isoDateTime = z.iso.datetime({ offset: true });

/**
 * When a token issued at `now` with `--expires TEXT` stops being accepted. TEXT is a duration
 * as `ms` reads it (90d, 12h, 2w, 1y, "30 days") or a date: YYYY-MM-DD (that day's start,
 * UTC) or an ISO date and time with its offset. Refused: a number without a unit (ms would
 * read milliseconds), a capital M (ms reads minutes, where many mean months), and anything
 * not in the future.
 */
export function tokenExpiry(text: string, now: Date): Date {
  const given = text.trim();
  let at: Date;
  if (isoDate.safeParse(given).success) at = new Date(`${given}T00:00:00Z`);
  else if (isoDateTime.safeParse(given).success) at = new Date(given);
  else {
    if (/^[\d.]+$/.test(given))
      throw new TokenExpiryError(`--expires ${given}: give a unit (90d, 12h, 2w, 1y) or a date (2027-01-31)`);
    if (/^[\d.]+\s*M$/.test(given))
      throw new TokenExpiryError(`--expires ${given}: M reads as minutes; write 30m for minutes or 30d for days`);
    const span = ms(given as ms.StringValue) as number | undefined;
    if (span === undefined || !Number.isFinite(span))
      throw new TokenExpiryError(
        `--expires ${given}: not a duration (90d, 12h, 2w, 1y) or a date (2027-01-31, 2027-01-31T18:00:00+01:00)`,
      );
    at = new Date(now.getTime() + span);
  }
  if (!Number.isFinite(at.getTime()))
    throw new TokenExpiryError(`--expires ${given}: beyond the dates a clock can show`);
  if (at.getTime() <= now.getTime())
    throw new TokenExpiryError(`--expires ${given}: ${at.toISOString()} is not in the future`);
  return at;
}

/** Whether a token's expiry has come (at `expiresAt` itself it no longer counts). */
export function hasExpired({ expiresAt }: { expiresAt: Date | null }, now: Date): boolean {
  return expiresAt !== null && expiresAt.getTime() <= now.getTime();
}

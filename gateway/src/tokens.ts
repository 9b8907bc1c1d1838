import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API tokens: `pw_` + 32 random bytes in base64url. The first 8 characters after `pw_` are
 * the token's public prefix: the key it is looked up by, and what `revoke-token` takes. Only
 * the SHA-256 digest of the whole token is stored; the digest is compared in constant time.
 */
const TOKEN_PATTERN = /^pw_([A-Za-z0-9_-]{43})$/;
export const TOKEN_PREFIX_LENGTH = 8;

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

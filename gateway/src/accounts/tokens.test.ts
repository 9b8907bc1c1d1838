import { describe, expect, it } from 'vitest';
import {
  digestsEqual,
  hasExpired,
  issueToken,
  tokenDigest,
  tokenExpiry,
  TokenExpiryError,
  tokenFromHeader,
  tokenPrefix,
} from './tokens.ts';

describe('tokens', () => {
  it('issues 32 random bytes with a lookup prefix and a SHA-256 digest', () => {
    const a = issueToken();
    const b = issueToken();
    expect(a.token).toMatch(/^pw_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.token.slice(3), 'base64url')).toHaveLength(32);
    expect(a.token).not.toBe(b.token);
    expect(a.prefix).toBe(a.token.slice(3, 11));
    expect(a.digest).toBe(tokenDigest(a.token));
    expect(a.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(a.digest).not.toContain(a.token.slice(3));
  });

  it('compares digests exactly', () => {
    const { digest } = issueToken();
    expect(digestsEqual(digest, digest)).toBe(true);
    expect(digestsEqual(digest, `${digest.slice(0, 63)}${digest[63] === '0' ? '1' : '0'}`)).toBe(false);
    expect(digestsEqual(digest, digest.slice(0, 62))).toBe(false);
    expect(digestsEqual('', '')).toBe(false);
  });

  it('takes the raw token or a Bearer token from the header', () => {
    const { token } = issueToken();
    expect(tokenFromHeader(token)).toBe(token);
    expect(tokenFromHeader(`Bearer ${token}`)).toBe(token);
    expect(tokenFromHeader(`bearer   ${token} `)).toBe(token);
    expect(tokenPrefix('not-a-token')).toBeNull();
    expect(tokenPrefix(`${token}x`)).toBeNull();
  });

  it('reads an expiry as a duration from now or as a date, and refuses what would surprise', () => {
    const now = new Date('2026-03-01T12:00:00.000Z');
    expect(tokenExpiry('90d', now)).toEqual(new Date('2026-05-30T12:00:00.000Z'));
    expect(tokenExpiry('12h', now)).toEqual(new Date('2026-03-02T00:00:00.000Z'));
    expect(tokenExpiry('2 weeks', now)).toEqual(new Date('2026-03-15T12:00:00.000Z'));
    expect(tokenExpiry('30m', now)).toEqual(new Date('2026-03-01T12:30:00.000Z'));
    // A date is that day's start, UTC; a time keeps its offset.
    expect(tokenExpiry('2027-01-31', now)).toEqual(new Date('2027-01-31T00:00:00.000Z'));
    expect(tokenExpiry('2026-03-01T18:00:00+01:00', now)).toEqual(new Date('2026-03-01T17:00:00.000Z'));
    // ms reads a bare number as milliseconds and M as minutes: neither is what one means here.
    expect(() => tokenExpiry('30', now)).toThrow(/give a unit/);
    expect(() => tokenExpiry('6M', now)).toThrow(/M reads as minutes/);
    expect(() => tokenExpiry('3 months', now)).toThrow(/not a duration/);
    expect(() => tokenExpiry('-1d', now)).toThrow(/not in the future/);
    expect(() => tokenExpiry('0d', now)).toThrow(/not in the future/);
    expect(() => tokenExpiry('2026-03-01', now)).toThrow(TokenExpiryError);
  });

  it('counts a token expired from its expiry on, and never one without', () => {
    const expiresAt = new Date('2026-03-01T12:00:00.000Z');
    expect(hasExpired({ expiresAt }, new Date(expiresAt.getTime() - 1))).toBe(false);
    expect(hasExpired({ expiresAt }, expiresAt)).toBe(true);
    expect(hasExpired({ expiresAt: null }, new Date(8.64e15))).toBe(false);
  });
});

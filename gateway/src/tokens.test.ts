import { describe, expect, it } from 'vitest';
import { digestsEqual, issueToken, tokenDigest, tokenFromHeader, tokenPrefix } from './tokens.ts';

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
});

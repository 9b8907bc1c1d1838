import { describe, expect, it } from 'vitest';
import { loginSeal } from './login-state.ts';

const NOW = new Date('2026-11-26T08:00:00Z');
const STATE = { state: 's', nonce: 'n', verifier: 'v', returnTo: '/#/', expiresAt: NOW.getTime() + 600_000 };

describe('the sealed state of a sign-in', () => {
  it('opens where it was sealed, with the same client secret (another replica)', () => {
    const sealed = loginSeal('secret').seal(STATE);
    expect(loginSeal('secret').open(sealed, NOW)).toEqual(STATE);
    expect(sealed).not.toContain('"nonce"');
  });

  it('does not open under another secret, changed by one character, expired, or absent', () => {
    const sealed = loginSeal('secret').seal(STATE);
    expect(loginSeal('another secret').open(sealed, NOW)).toBeNull();
    const changed = `${sealed.slice(0, 20)}${sealed[20] === 'A' ? 'B' : 'A'}${sealed.slice(21)}`;
    expect(loginSeal('secret').open(changed, NOW)).toBeNull();
    expect(loginSeal('secret').open(sealed, new Date(STATE.expiresAt))).toBeNull();
    expect(loginSeal('secret').open(undefined, NOW)).toBeNull();
    expect(loginSeal('secret').open('not sealed', NOW)).toBeNull();
  });
});

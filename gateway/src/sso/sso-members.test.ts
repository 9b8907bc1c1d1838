import { describe, expect, it } from 'vitest';
import { signInMember, userName, type SsoMembersStore } from './sso-members.ts';

describe('userName', () => {
  it('is the email the provider vouches for, else its username, else the subject', () => {
    expect(userName({ email: 'ana@example.test', email_verified: true }, 's1')).toEqual({
      name: 'ana@example.test',
      verifiedEmail: true,
    });
    expect(userName({ email: 'ana@example.test' }, 's1')).toEqual({ name: 'ana@example.test', verifiedEmail: false });
    expect(userName({ email: 'ana@example.test', email_verified: false, preferred_username: 'ana' }, 's1')).toEqual({
      name: 'ana',
      verifiedEmail: false,
    });
    expect(userName({ email: '', preferred_username: 42 }, 's1')).toEqual({ name: 's1', verifiedEmail: false });
  });
});

describe('signInMember', () => {
  it('refuses a groups claim of another shape without reading or changing anything', async () => {
    const touched: string[] = [];
    // Every store method records that it was called: none may be.
    const store = new Proxy({} as SsoMembersStore, {
      get: (_target, name) => () => {
        touched.push(String(name));
        throw new Error('not to be called');
      },
    });
    for (const groups of [{ 'perfwatch:web:admin': true }, 42, null]) {
      const identity = { issuer: 'https://idp.example', subject: 's1', claims: { groups } };
      const answer = await signInMember(store, identity, { groupsClaim: 'groups', groupPrefix: 'perfwatch:' });
      expect(answer).toEqual({ ok: false, reason: expect.stringMatching(/groups claim is not a list of groups/) });
    }
    expect(touched).toEqual([]);
  });
});

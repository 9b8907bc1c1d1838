import { describe, expect, it } from 'vitest';
import { userName } from './sso-members.ts';

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

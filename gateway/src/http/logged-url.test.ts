import { describe, expect, it } from 'vitest';
import { loggedUrl } from './logged-url.ts';

describe('the URL a log keeps', () => {
  it('keeps what is not secret as it came', () => {
    expect(loggedUrl('/v1/audit?url=https%3A%2F%2Fshop.example%2F&device=mobile')).toBe(
      '/v1/audit?url=https%3A%2F%2Fshop.example%2F&device=mobile',
    );
    expect(loggedUrl('/v1/projects')).toBe('/v1/projects');
  });

  it('drops the values of parameters named like secrets', () => {
    expect(loggedUrl('/v1/audit?url=x&token=abc&Authorization=Bearer%20x&api%5Fkey=1')).toBe(
      '/v1/audit?url=x&token=[redacted]&Authorization=[redacted]&api%5Fkey=[redacted]',
    );
    expect(loggedUrl('/auth/sso/callback?code=c0de&state=s&iss=x')).toBe(
      '/auth/sso/callback?code=[redacted]&state=s&iss=x',
    );
  });

  it('drops anything shaped like a perfwatch token or webhook secret, wherever it is', () => {
    const token = `pw_${'a'.repeat(43)}`;
    expect(loggedUrl(`/v1/audit?url=${token}`)).not.toContain(token);
    expect(loggedUrl(`/v1/${token}/x`)).not.toContain(token);
    expect(loggedUrl(`/v1/webhooks?x=pwhs_${'b'.repeat(43)}`)).not.toContain('bbbbbbbb');
  });
});

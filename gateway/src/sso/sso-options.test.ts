import { describe, expect, it } from 'vitest';
import { gatewayConfigWith } from '../config.ts';
import { ssoOptionsOf } from './sso-options.ts';

const SSO = {
  SSO_ISSUER_URL: 'https://idp.example/realms/company',
  SSO_CLIENT_ID: 'perfwatch',
  SSO_CLIENT_SECRET: 'secret',
  PUBLIC_URL: 'https://perfwatch.example',
};

describe('ssoOptionsOf', () => {
  it('is nothing without an issuer: the dashboard signs in with tokens only', () => {
    expect(ssoOptionsOf(gatewayConfigWith({}))).toBeUndefined();
  });

  it('takes the redirect URI from PUBLIC_URL, or SSO_REDIRECT_URL when set, and the defaults', () => {
    expect(ssoOptionsOf(gatewayConfigWith(SSO))).toMatchObject({
      redirectUrl: new URL('https://perfwatch.example/auth/sso/callback'),
      scopes: ['openid', 'profile', 'email', 'groups'],
      groupsClaim: 'groups',
      groupPrefix: 'perfwatch:',
      sessionTtlMs: 8 * 3_600_000,
    });
    const behindPath = { ...SSO, SSO_REDIRECT_URL: 'https://tools.example/perfwatch/auth/sso/callback' };
    expect(ssoOptionsOf(gatewayConfigWith(behindPath))?.redirectUrl.href).toBe(behindPath.SSO_REDIRECT_URL);
  });

  it('refuses a half configuration, naming what is missing', () => {
    const { SSO_CLIENT_SECRET: _secret, PUBLIC_URL: _url, ...half } = SSO;
    expect(() => ssoOptionsOf(gatewayConfigWith(half))).toThrow(
      'SSO_ISSUER_URL is set: SSO_CLIENT_SECRET, PUBLIC_URL or SSO_REDIRECT_URL must be set too',
    );
  });

  it('refuses a plain-http provider unless SSO_ALLOW_HTTP_ISSUER says it is a test', () => {
    const http = { ...SSO, SSO_ISSUER_URL: 'http://127.0.0.1:4000' };
    expect(() => ssoOptionsOf(gatewayConfigWith(http))).toThrow(/SSO_ALLOW_HTTP_ISSUER/);
    expect(ssoOptionsOf(gatewayConfigWith({ ...http, SSO_ALLOW_HTTP_ISSUER: true }))?.allowHttpIssuer).toBe(true);
  });
});

import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcProvider, signInWithForm, type OidcProvider } from '../support/oidc-provider.ts';

/**
 * The harness's OpenID Provider is a real one: discovery, Authorization Code with PKCE through
 * its own login page, an ID token openid-client verifies, with the user's groups in it.
 */

const REDIRECT_URI = 'http://127.0.0.1:9/sso/callback';
const CLIENT = { clientId: 'perfwatch', clientSecret: 'perfwatch-test-secret', redirectUris: [REDIRECT_URI] };
const ALICE = {
  sub: 'alice',
  email: 'alice@example.test',
  name: 'Alice Admin',
  password: 'correct horse battery staple',
  groups: ['perfwatch-admins', 'squad-checkout'],
};
const BOB = { sub: 'bob', email: 'bob@example.test', name: 'Bob', password: 'hunter2', groups: [] };

let provider: OidcProvider;
let config: oidc.Configuration;

beforeAll(async () => {
  provider = await startOidcProvider({ users: [ALICE, BOB], client: CLIENT });
  config = await oidc.discovery(
    new URL(provider.issuer),
    CLIENT.clientId,
    undefined,
    oidc.ClientSecretBasic(CLIENT.clientSecret),
    // The provider is on plain http on loopback; openid-client refuses that unless told.
    { execute: [oidc.allowInsecureRequests], timeout: provider.requestTimeoutMs / 1000 },
  );
});
afterAll(() => provider?.stop());

/** An authorization request as an SSO login makes one, and what it must check on the way back. */
async function authorization(extra: Record<string, string> = {}) {
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid profile email groups',
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    ...extra,
  });
  return { url, codeVerifier, state };
}

const signIn = (url: URL, login: string, password: string) =>
  signInWithForm(url, { login, password, redirectUri: REDIRECT_URI, timeoutMs: provider.requestTimeoutMs });

describe('the tests’ OpenID provider', () => {
  it('publishes a discovery document for Authorization Code with PKCE and a groups claim', () => {
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(provider.issuer);
    expect(metadata.response_types_supported).toContain('code');
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.scopes_supported).toEqual(expect.arrayContaining(['openid', 'profile', 'email', 'groups']));
    expect(metadata.claims_supported).toEqual(expect.arrayContaining(['sub', 'email', 'name', 'groups']));
    expect(metadata.jwks_uri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
  });

  it('signs a user in through its login page and issues an ID token with their email and groups', async () => {
    const { url, codeVerifier, state } = await authorization();
    const signedIn = await signIn(url, ALICE.email, ALICE.password);
    expect(signedIn.callback?.searchParams.get('code')).toBeTruthy();
    const tokens = await oidc.authorizationCodeGrant(config, signedIn.callback!, {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
    });
    expect(tokens.claims()).toMatchObject({
      iss: provider.issuer,
      aud: CLIENT.clientId,
      sub: ALICE.sub,
      email: ALICE.email,
      name: ALICE.name,
      groups: ALICE.groups,
    });
    const userInfo = await oidc.fetchUserInfo(config, tokens.access_token, ALICE.sub);
    expect(userInfo).toMatchObject({ sub: ALICE.sub, groups: ALICE.groups });
  });

  it('refuses a wrong password with its login page again, then takes the right one', async () => {
    const { url, codeVerifier, state } = await authorization();
    const refused = await signIn(url, BOB.email, 'not-his-password');
    expect(refused.status).toBe(401);
    expect(refused.callback).toBeUndefined();
    expect(refused.page).toContain('Wrong email or password');
    const signedIn = await signIn(url, BOB.email, BOB.password);
    const tokens = await oidc.authorizationCodeGrant(config, signedIn.callback!, {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
    });
    expect(tokens.claims()).toMatchObject({ sub: BOB.sub, groups: [] });
  });

  it('requires PKCE and the code’s own verifier', async () => {
    const { url } = await authorization();
    url.searchParams.delete('code_challenge');
    url.searchParams.delete('code_challenge_method');
    const withoutPkce = await signIn(url, ALICE.email, ALICE.password);
    expect(withoutPkce.callback?.searchParams.get('error')).toBe('invalid_request');

    const { url: other, state } = await authorization();
    const signedIn = await signIn(other, ALICE.email, ALICE.password);
    const wrongVerifier = oidc.authorizationCodeGrant(config, signedIn.callback!, {
      pkceCodeVerifier: oidc.randomPKCECodeVerifier(),
      expectedState: state,
    });
    await expect(wrongVerifier).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

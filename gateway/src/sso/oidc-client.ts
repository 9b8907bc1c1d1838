import * as oidc from 'openid-client';
import type { Logger } from 'pino';
import type { LoginState } from './login-state.ts';
import type { SsoOptions } from './sso-options.ts';

/** Who signed in, as the provider vouched for it in the ID token (and userinfo, for claims it left out there). */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  claims: Record<string, unknown>;
}

/** The sign-in with the provider could not go on; `message` may be shown, the cause only logged. */
export class SignInFailed extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SignInFailed';
  }
}

export interface OidcClient {
  /** Where to send the browser: the provider's authorization endpoint with this sign-in's checks. */
  authorizationUrl(checks: Pick<LoginState, 'state' | 'nonce' | 'verifier'>): Promise<URL>;
  /** The callback's query checked against `checks`, the code exchanged, the ID token verified. */
  identity(callbackQuery: URLSearchParams, checks: LoginState): Promise<OidcIdentity>;
}

const REQUEST_TIMEOUT_SECONDS = 10;

/**
 * perfwatch as a confidential client of the provider (client_secret_basic). Its discovery
 * document is read once, at start; a failed read is logged and tried again at the next sign-in.
 */
export function createOidcClient(options: SsoOptions, logger: Logger): OidcClient {
  let discovered: Promise<oidc.Configuration> | undefined;
  const configuration = (): Promise<oidc.Configuration> => {
    discovered ??= discover(options).catch((error: unknown) => {
      discovered = undefined;
      logger.warn({ issuer: options.issuer.href, err: error }, 'the OpenID provider could not be discovered');
      throw new SignInFailed('The identity provider could not be reached; try again in a moment.', { cause: error });
    });
    return discovered;
  };
  void configuration().catch(() => undefined);
  return {
    async authorizationUrl({ state, nonce, verifier }) {
      const config = await configuration();
      return oidc.buildAuthorizationUrl(config, {
        redirect_uri: options.redirectUrl.href,
        scope: scopesOffered(config, options.scopes).join(' '),
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
    },
    async identity(query, checks) {
      const config = await configuration();
      return exchange(config, options, query, checks).catch((error: unknown) => {
        if (error instanceof SignInFailed) throw error;
        logger.warn({ err: error }, 'a single sign-on callback was refused');
        throw new SignInFailed('The identity provider’s answer did not check out; sign in again.', { cause: error });
      });
    },
  };
}

function discover(options: SsoOptions): Promise<oidc.Configuration> {
  return oidc.discovery(options.issuer, options.clientId, undefined, oidc.ClientSecretBasic(options.clientSecret), {
    timeout: REQUEST_TIMEOUT_SECONDS,
    ...(options.allowHttpIssuer ? { execute: [oidc.allowInsecureRequests] } : {}),
  });
}

/** The scopes asked for that the provider offers (some refuse a request naming one they do not); `openid` always. */
function scopesOffered(config: oidc.Configuration, wanted: readonly string[]): string[] {
  const supported = config.serverMetadata().scopes_supported;
  const offered = supported ? wanted.filter((scope) => supported.includes(scope)) : [...wanted];
  return offered.includes('openid') ? offered : ['openid', ...offered];
}

async function exchange(
  config: oidc.Configuration,
  options: SsoOptions,
  query: URLSearchParams,
  checks: LoginState,
): Promise<OidcIdentity> {
  // The URL the provider sent the browser to, whatever Host the request came in with behind a proxy.
  const current = new URL(options.redirectUrl.href);
  current.search = query.toString();
  const tokens = await oidc.authorizationCodeGrant(config, current, {
    pkceCodeVerifier: checks.verifier,
    expectedState: checks.state,
    expectedNonce: checks.nonce,
    idTokenExpected: true,
  });
  const idToken = tokens.claims()!;
  let claims: Record<string, unknown> = { ...idToken };
  // Providers that keep groups out of the ID token (a size limit) give them at userinfo.
  if (!(options.groupsClaim in claims) && config.serverMetadata().userinfo_endpoint) {
    const userInfo = await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub);
    claims = { ...userInfo, ...claims };
  }
  return { issuer: idToken.iss, subject: idToken.sub, claims };
}

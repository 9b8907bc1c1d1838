import type { GatewayConfig } from '../config.ts';

/** The dashboard's single sign-on as configured (settings/sso.ts): present only when SSO_ISSUER_URL is set. */
export interface SsoOptions {
  issuer: URL;
  clientId: string;
  clientSecret: string;
  /** The redirect URI registered at the provider (ours: /auth/sso/callback). */
  redirectUrl: URL;
  scopes: string[];
  groupsClaim: string;
  groupPrefix: string;
  sessionTtlMs: number;
  /** The provider on plain http (tests, development). */
  allowHttpIssuer: boolean;
}

const CALLBACK_PATH = '/auth/sso/callback';

/**
 * The SSO settings as options; undefined without SSO_ISSUER_URL. Throws, naming what is missing,
 * when SSO is half configured: better a gateway that does not start than one whose sign-in fails.
 */
export function ssoOptionsOf(config: GatewayConfig): SsoOptions | undefined {
  if (config.SSO_ISSUER_URL === undefined) return undefined;
  const missing = [
    config.SSO_CLIENT_ID === undefined ? 'SSO_CLIENT_ID' : null,
    config.SSO_CLIENT_SECRET === undefined ? 'SSO_CLIENT_SECRET' : null,
    config.SSO_REDIRECT_URL === undefined && config.PUBLIC_URL === undefined ? 'PUBLIC_URL or SSO_REDIRECT_URL' : null,
  ].filter((name) => name !== null);
  if (missing.length) throw new Error(`SSO_ISSUER_URL is set: ${missing.join(', ')} must be set too`);
  const issuer = new URL(config.SSO_ISSUER_URL);
  if (issuer.protocol === 'http:' && !config.SSO_ALLOW_HTTP_ISSUER)
    throw new Error('SSO_ISSUER_URL is plain http: set SSO_ALLOW_HTTP_ISSUER=true for tests and development only');
  return {
    issuer,
    clientId: config.SSO_CLIENT_ID!,
    clientSecret: config.SSO_CLIENT_SECRET!,
    redirectUrl: new URL(config.SSO_REDIRECT_URL ?? new URL(CALLBACK_PATH, config.PUBLIC_URL).href),
    scopes: config.SSO_SCOPES.split(' '),
    groupsClaim: config.SSO_GROUPS_CLAIM,
    groupPrefix: config.SSO_GROUP_PREFIX,
    sessionTtlMs: config.SSO_SESSION_TTL_MS,
    allowHttpIssuer: config.SSO_ALLOW_HTTP_ISSUER,
  };
}

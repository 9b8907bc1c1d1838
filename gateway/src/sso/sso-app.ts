import type { Logger } from 'pino';
import type { GatewayConfig } from '../config.ts';
import type { Store } from '../store/store.ts';
import { createOidcClient } from './oidc-client.ts';
import { ssoOptionsOf } from './sso-options.ts';
import type { SsoDeps } from './sso-routes.ts';

/** The app's single sign-on from the settings: `{ sso }` with SSO_ISSUER_URL set, else nothing. Throws when half set. */
export function ssoAppOf({ config, store, logger }: { config: GatewayConfig; store: Store; logger: Logger }): {
  sso?: SsoDeps;
} {
  const options = ssoOptionsOf(config);
  if (!options) return {};
  logger.info({ issuer: options.issuer.href, redirectUrl: options.redirectUrl.href }, 'single sign-on configured');
  return { sso: { options, client: createOidcClient(options, logger), store, logger } };
}

import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

const flag = z
  .enum(['true', 'false'])
  .default('false')
  .transform((value) => value === 'true');

/**
 * The dashboard's single sign-on (OpenID Connect, Authorization Code with PKCE). Unset
 * SSO_ISSUER_URL: no SSO, the dashboard signs in with an API token only.
 */
export const ssoSettings = settingGroup('Single sign-on', {
  SSO_ISSUER_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      "The OpenID provider's issuer (its discovery document is at ISSUER/.well-known/openid-configuration). " +
        'Set: the dashboard offers "Sign in with single sign-on"; SSO_CLIENT_ID, SSO_CLIENT_SECRET and PUBLIC_URL ' +
        '(or SSO_REDIRECT_URL) are needed too. The dashboard must then be reached over https (or at localhost): ' +
        'its session cookie is Secure.',
    ),
  SSO_CLIENT_ID: z.string().min(1).optional().describe('The client id perfwatch is registered with at the provider.'),
  SSO_CLIENT_SECRET: z
    .string()
    .min(1)
    .optional()
    .describe("The client's secret (sent as HTTP Basic, client_secret_basic); it also seals the sign-in cookie."),
  SSO_REDIRECT_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      'The redirect URI registered at the provider: where it sends the browser back. Unset: PUBLIC_URL/auth/sso/callback.',
    ),
  SSO_SCOPES: z
    .string()
    .regex(/^[\x21-\x7e]+( [\x21-\x7e]+)*$/, 'must be scope names separated by single spaces')
    .default('openid profile email groups')
    .describe(
      'The scopes asked for, space-separated: of these, those the provider lists in its scopes_supported (all when ' +
        'it lists none), and `openid` always. One of them must bring the groups claim.',
    ),
  SSO_GROUPS_CLAIM: z
    .string()
    .min(1)
    .default('groups')
    .describe(
      "The claim (of the ID token, else of userinfo) that lists the user's groups: an array of strings, or one string.",
    ),
  SSO_GROUP_PREFIX: z
    .string()
    .min(1)
    .default('perfwatch:')
    .describe(
      'Groups named PREFIX<organisation>:<role> (role viewer, editor or admin) make the user a member of that ' +
        'organisation with that role, the organisation made if new; other groups are ignored. A user with none is refused.',
    ),
  SSO_SESSION_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(30 * 86_400_000)
    .default(28_800_000)
    .describe('How long a dashboard session lasts after sign-in; then the user signs in again.'),
  SSO_ALLOW_HTTP_ISSUER: flag.describe(
    'true: the provider may be reached over plain http (tests and development only; never in production).',
  ),
});

import { z } from 'zod';
import { TOKEN_SCOPES, tokenScopeSchema, type TokenScope } from '../access.ts';
import { once, oneOf, projectUrl } from './request-fields.ts';

// ---- /v1/tokens -------------------------------------------------------------------------

/** A new token as asked for: the expiry still as written (a duration or a date, read by the gateway's clock). */
export interface NewTokenRequest {
  scope: TokenScope;
  /** A `ci` token's projects; null for every other scope. */
  projects: string[] | null;
  expires: string | null;
  label: string | null;
}

/** What a request of /v1/tokens asks: the organisation's tokens (GET), a new one (POST), a revocation (DELETE). */
export type TokensParams =
  { action: 'list' } | ({ action: 'create' } & NewTokenRequest) | { action: 'revoke'; prefix: string };

/** Projects a ci token may list. */
const MAX_TOKEN_PROJECTS = 100;

/** No parameters: every token of the caller's organisation. */
export const tokensQuerySchema = z.strictObject({}).transform((): TokensParams => ({ action: 'list' }));
/** Parameters that make a token: refused in a GET (parseRequest's `writes`). */
export const TOKENS_WRITES = ['scope', 'projects', 'expires', 'label'] as const;
/** POST: a new token for the caller, in the caller's organisation. */
export const tokensBodySchema = z
  .strictObject({
    scope: oneOf('scope', TOKEN_SCOPES).meta({
      description: `What the token may do (${TOKEN_SCOPES.join(', ')}), no more than the caller's role: read a viewer's reads; ci updates and annotations of its projects; editor, admin that role.`,
    }),
    projects: z
      .array(projectUrl, { error: 'projects must be an array of project URLs' })
      .min(1, 'projects must not be empty')
      .max(MAX_TOKEN_PROJECTS, `projects has more than ${MAX_TOKEN_PROJECTS} URLs`)
      .optional()
      .meta({
        description: 'scope ci only, and required there: the URLs of the projects of the organisation it may measure.',
      }),
    expires: z
      .string({ error: 'expires must be a string' })
      .min(1, 'expires must not be empty')
      .max(100, 'expires is longer than 100 characters')
      .optional()
      .meta({
        description:
          "When it stops being accepted: a duration (90d, 12h, 2w, 1y) or a date (2027-01-31: that day's start, UTC; or a date and time with its offset). Absent: until revoked.",
        example: '90d',
      }),
    label: z
      .string({ error: 'label must be a string' })
      .max(200, 'label is longer than 200 characters')
      .optional()
      .meta({ description: 'What it is for ("CI of the web app"), shown beside it.' }),
  })
  .superRefine((value, ctx) => {
    if (value.scope === 'ci' && value.projects === undefined)
      ctx.addIssue({ code: 'custom', path: ['projects'], message: 'projects is required for scope ci' });
    if (value.scope !== 'ci' && value.projects !== undefined)
      ctx.addIssue({ code: 'custom', path: ['projects'], message: 'projects goes with scope ci only' });
  })
  .transform(({ scope, projects, expires, label }): TokensParams => ({
    action: 'create',
    scope,
    projects: projects === undefined ? null : [...new Set(projects)],
    expires: expires ?? null,
    label: label ?? null,
  }));
/** DELETE: the token to revoke, by its public prefix. */
export const tokenDeleteSchema = z
  .strictObject({
    prefix: z
      .string(once('prefix'))
      .regex(/^[A-Za-z0-9_-]{8}$/, 'prefix must be the 8 characters after pw_, as listed')
      .meta({ description: "The token's public prefix: the 8 characters after `pw_`, as listed." }),
  })
  .transform(({ prefix }): TokensParams => ({ action: 'revoke', prefix }));

/** A token as the API shows it: never its secret or digest. */
const tokenViewSchema = z
  .object({
    prefix: z.string().meta({ description: 'Its public prefix: the 8 characters after `pw_`.' }),
    label: z.string().nullable(),
    scope: tokenScopeSchema,
    projects: z.array(z.string()).nullable().meta({ description: "A ci token's projects; null for other scopes." }),
    user: z.string().nullable().meta({ description: 'The member it acts for, by name; null: the user is gone.' }),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime().nullable(),
    revokedAt: z.iso.datetime().nullable(),
    expired: z.boolean().meta({ description: 'Its expiry has come: it is refused (401).' }),
  })
  .meta({ id: 'TokenView' });
export type TokenView = z.infer<typeof tokenViewSchema>;

/** GET: the organisation's tokens, revoked and expired ones included, oldest first. */
export const tokenListSchema = z.object({ tokens: z.array(tokenViewSchema) }).meta({ id: 'TokenList' });
/** POST: the new token, with its secret: shown this once, never again. */
export const tokenCreatedSchema = tokenViewSchema
  .extend({ token: z.string().meta({ description: 'The token itself: shown this once; keep it secret.' }) })
  .meta({ id: 'TokenCreated' });
export type TokenCreated = z.infer<typeof tokenCreatedSchema>;
/** DELETE: that it is revoked (now, or already before). */
export const tokenRevokedSchema = z
  .object({ prefix: z.string(), revoked: z.literal(true) })
  .meta({ id: 'TokenRevoked' });

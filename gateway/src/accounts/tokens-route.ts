import type { Request, Response } from 'express';
import {
  API_ENDPOINTS,
  ApiError,
  scopeRole,
  scopesWithin,
  type ApiAnswer,
  type NewTokenRequest,
  type TokenCreated,
  type TokensParams,
  type TokenView,
} from '@perfwatch/common';
import type { AuditLog } from '../audit-log/audit-log.ts';
import type { Caller } from '../http/auth.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import { DuplicateError } from '../store/store.ts';
import type { AccountsStore, TokenRecord } from './store/accounts-store.ts';
import { hasExpired, issueToken, tokenExpiry, TokenExpiryError } from './tokens.ts';
import { userNames } from './user-names.ts';

type TokensRouteStore = Pick<
  AccountsStore,
  'addToken' | 'findToken' | 'listOrganisationTokens' | 'revokeToken' | 'listUsers'
> &
  Pick<ProjectsStore, 'findProject'>;

interface TokensRouteDeps {
  store: TokensRouteStore;
  audit: AuditLog;
  now?: () => Date;
}

/** A token as the API shows it: never its secret or digest. */
const viewOf = (token: TokenRecord, user: string | null, now: Date): TokenView => ({
  prefix: token.prefix,
  label: token.label,
  scope: token.scope,
  projects: token.projects,
  user,
  createdAt: token.createdAt.toISOString(),
  expiresAt: token.expiresAt?.toISOString() ?? null,
  revokedAt: token.revokedAt?.toISOString() ?? null,
  expired: hasExpired(token, now),
});

/**
 * `/v1/tokens`: the caller's organisation's tokens (GET), a new one for the caller in it (POST,
 * its secret in the answer this once), a revocation (DELETE ?prefix=). Who may use it is the
 * endpoint table's (admins); what scope a token may have is the caller's role's.
 */
export function tokensRoute({ store, audit, now = () => new Date() }: TokensRouteDeps) {
  return async (req: Request, res: Response): Promise<void> => {
    const params: TokensParams = parseRequest(req, API_ENDPOINTS.tokens);
    const caller = req.caller!;
    // The answer to a POST holds a secret; the others are not worth keeping either.
    res.set('Cache-Control', 'no-store');
    let answer: ApiAnswer<'tokens'>;
    if (params.action === 'create') answer = await createToken({ store, audit, now }, caller, params);
    else if (params.action === 'revoke') answer = await revokeToken({ store, audit }, caller, params.prefix);
    else {
      const at = now();
      const [tokens, names] = await Promise.all([store.listOrganisationTokens(caller.orgId), userNames(store)]);
      answer = { tokens: tokens.map((token) => viewOf(token, names.get(token.userId) ?? null, at)) };
    }
    res.json(answer);
  };
}

async function createToken(
  { store, audit, now }: Required<TokensRouteDeps>,
  caller: Caller,
  request: NewTokenRequest,
): Promise<TokenCreated> {
  if (!scopesWithin(caller.role).includes(request.scope))
    throw new ApiError('FORBIDDEN', 'Not allowed.', [
      `scope: a ${request.scope} token needs the ${scopeRole(request.scope)} role; you have ${caller.role}`,
    ]);
  const at = now();
  const expiresAt = notOutliving(caller, request.expires === null ? null : expiryOf(request.expires, at));
  for (const url of request.projects ?? [])
    if (!(await store.findProject(caller.orgId, url)))
      throw new ApiError('BAD_REQUEST', 'The request has invalid parameters.', [
        `projects: no project of this organisation has the URL ${url}`,
      ]);
  const { scope, projects, label } = request;
  for (;;) {
    const issued = issueToken();
    try {
      const { prefix, digest } = issued;
      await store.addToken({
        prefix,
        digest,
        userId: caller.userId,
        orgId: caller.orgId,
        scope,
        projects,
        label,
        expiresAt,
      });
    } catch (error) {
      // Two tokens sharing a 48-bit prefix: vanishingly rare, and simply drawn again.
      if (error instanceof DuplicateError) continue;
      throw error;
    }
    const record = (await store.findToken(issued.prefix))!;
    await audit.record(caller, {
      action: 'token.created',
      target: issued.prefix,
      details: { scope, label, projects: projects?.join(' ') ?? null, expiresAt: expiresAt?.toISOString() ?? null },
    });
    const names = await userNames(store);
    return { ...viewOf(record, names.get(caller.userId) ?? null, at), token: issued.token };
  }
}

/**
 * A token made with a token expires no later than the one that made it: a short-lived or leaked
 * token cannot turn itself into one that lasts (a session's are the member's own choice).
 */
function notOutliving(caller: Caller, asked: Date | null): Date | null {
  const limit = caller.via.kind === 'token' ? (caller.via.expiresAt ?? null) : null;
  if (limit === null) return asked;
  return asked === null || asked.getTime() > limit.getTime() ? limit : asked;
}

/** When a token asked for at `now` stops being accepted: the admin CLI's reading, its refusal a 400 naming `expires`. */
function expiryOf(text: string, now: Date): Date {
  try {
    return tokenExpiry(text, now);
  } catch (error) {
    if (!(error instanceof TokenExpiryError)) throw error;
    throw new ApiError('BAD_REQUEST', 'The request has invalid parameters.', [
      error.message.replace(/^--expires /, 'expires '),
    ]);
  }
}

/** Revokes a token of the caller's organisation; one already revoked stays so. Another organisation's is unknown here. */
async function revokeToken(
  { store, audit }: Pick<TokensRouteDeps, 'store' | 'audit'>,
  caller: Caller,
  prefix: string,
): Promise<ApiAnswer<'tokens'>> {
  const token = await store.findToken(prefix);
  if (!token || token.orgId !== caller.orgId)
    throw new ApiError('NOT_FOUND', 'Token not found.', [
      `prefix: no token of this organisation has the prefix ${prefix}`,
    ]);
  if (token.revokedAt === null && (await store.revokeToken(prefix)))
    await audit.record(caller, { action: 'token.revoked', target: prefix, details: { scope: token.scope } });
  return { prefix, revoked: true };
}

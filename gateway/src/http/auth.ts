import type { NextFunction, Request, Response } from 'express';
import { ApiError, lesserRole, scopeRole, type Role, type TokenScope } from '@perfwatch/common';
import type { AccountsStore } from '../accounts/store/accounts-store.ts';
import type { TeamsStore } from '../teams/store/teams-store.ts';
import type { SessionAuthenticator } from '../sso/session-auth.ts';
import { digestsEqual, hasExpired, tokenDigest, tokenFromHeader, tokenPrefix } from '../accounts/tokens.ts';

/** Who a request is from and what it may do (issue 33). */
export interface Caller {
  /**
   * The organisation whose records the request reads and writes (a record's `userId` holds its
   * owner organisation's id), and what fair-use limits count by.
   */
  orgId: string;
  /** The member making it. */
  userId: string;
  /** What it may do: the member's role, no more than its token's scope gives. */
  role: Role;
  /** A `ci` token's project URLs, the only projects it sees; null: every project of the organisation. */
  projects: readonly string[] | null;
  /**
   * A token (its public prefix, for the audit log, its scope, and its expiry, which tokens it
   * makes do not outlive) or a dashboard session.
   */
  via: { kind: 'token'; prefix: string; scope: TokenScope; expiresAt?: Date | null } | { kind: 'session' };
}

declare module 'express-serve-static-core' {
  interface Request {
    caller?: Caller;
    requestId: string;
  }
}

/** What authentication reads: tokens, and the memberships that give their users a role. */
export type AuthStore = Pick<AccountsStore, 'findToken'> & Pick<TeamsStore, 'findMembership'>;

/**
 * Checks the `Authorization` header: absent → 400 naming the header; anything that is not
 * a live token → 401. The token is looked up by its public prefix and its SHA-256 digest
 * compared in constant time; neither the token nor its digest is ever logged. A token past its
 * expiry is told so (401, "expired"), but only once it matched: a guess of a prefix learns nothing.
 * A token whose user is no longer a member of its organisation is no longer valid. With `session`
 * (single sign-on), a request without the header may come with the dashboard's session cookie.
 */
export function authenticate(
  store: AuthStore,
  onFailure: (req: Request) => Promise<void> = async () => undefined,
  session?: SessionAuthenticator,
) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const header = req.get('authorization');
    // Without a token, the dashboard's session cookie (with single sign-on): sso/session-auth.ts.
    const sessionCaller = header === undefined && session ? await session(req, onFailure) : null;
    if (sessionCaller) {
      req.caller = sessionCaller;
      return next();
    }
    if (header === undefined) {
      throw new ApiError('BAD_REQUEST', 'The Authorization header is missing.', [
        'header Authorization: required, holding the API token',
      ]);
    }
    const token = tokenFromHeader(header);
    const prefix = tokenPrefix(token);
    const record = prefix === null ? null : await store.findToken(prefix);
    if (!record || record.revokedAt !== null || !digestsEqual(tokenDigest(token), record.digest)) {
      await onFailure(req);
      throw new ApiError('UNAUTHORIZED', 'The API token is not valid.', [
        'header Authorization: unknown or revoked token',
      ]);
    }
    if (hasExpired(record, new Date())) {
      await onFailure(req);
      throw new ApiError('UNAUTHORIZED', 'The API token has expired.', [
        `header Authorization: the token expired at ${record.expiresAt!.toISOString()}; ask for a new one`,
      ]);
    }
    const membership = await store.findMembership(record.orgId, record.userId);
    if (!membership) {
      await onFailure(req);
      throw new ApiError('UNAUTHORIZED', 'The API token is not valid.', [
        "header Authorization: the token's user is no longer a member of its organisation",
      ]);
    }
    req.caller = {
      orgId: record.orgId,
      userId: record.userId,
      role: lesserRole(membership.role, scopeRole(record.scope)),
      // A ci token whose list is missing sees no project, never every one.
      projects: record.scope === 'ci' ? (record.projects ?? []) : null,
      via: { kind: 'token', prefix: record.prefix, scope: record.scope, expiresAt: record.expiresAt },
    };
    next();
  };
}

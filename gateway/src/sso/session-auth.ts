import type { Request } from 'express';
import { ApiError } from '@perfwatch/common';
import type { Caller } from '../http/auth.ts';
import type { TeamsStore } from '../teams/store/teams-store.ts';
import { SESSION_COOKIE } from './cookies.ts';
import { carriesCsrfToken, requestSession } from './sessions.ts';
import type { SessionRecord, SsoStore } from './store/sso-store.ts';

const CSRF_HEADER = 'X-CSRF-Token';

/** A request with the session cookie but without its CSRF token: a page elsewhere may have made it. */
const csrfRefusal = () =>
  new ApiError('FORBIDDEN', `The ${CSRF_HEADER} header is missing or wrong.`, [
    `header ${CSRF_HEADER}: required with the ${SESSION_COOKIE} cookie, holding the session's CSRF token (GET /auth/session)`,
  ]);

const invalidSession = (why: string) =>
  new ApiError('UNAUTHORIZED', 'The session is not valid.', [`cookie ${SESSION_COOKIE}: ${why}; sign in again`]);

/**
 * The live session of a request that must have one, with its CSRF token checked: 401 for a
 * cookie that names no live session, 403 without the session's token in X-CSRF-Token. Every
 * request of a session carries it, reads too: some of the API's GETs write.
 */
export async function checkedSession(
  store: Pick<SsoStore, 'findSession'>,
  req: Request,
  onInvalid: (req: Request) => Promise<void> = async () => undefined,
): Promise<SessionRecord | null> {
  const found = await requestSession(store, req);
  if (found.kind === 'absent') return null;
  if (found.kind === 'invalid') {
    await onInvalid(req);
    throw invalidSession('unknown or expired session');
  }
  if (!carriesCsrfToken(req, found.session)) throw csrfRefusal();
  return found.session;
}

/** What authenticate (http/auth.ts) calls for a request without Authorization: its session's caller, or null. */
export type SessionAuthenticator = (req: Request, onFailure: (req: Request) => Promise<void>) => Promise<Caller | null>;

/** The dashboard's session as a caller: its user in its current organisation, with their role there. */
export function sessionAuthenticator(
  store: Pick<SsoStore, 'findSession'> & Pick<TeamsStore, 'findMembership'>,
): SessionAuthenticator {
  return async (req, onFailure) => {
    const session = await checkedSession(store, req, onFailure);
    if (!session) return null;
    const membership = await store.findMembership(session.orgId, session.userId);
    if (!membership) throw invalidSession("you are no longer a member of the session's organisation");
    return {
      orgId: session.orgId,
      userId: session.userId,
      role: membership.role,
      projects: null,
      via: { kind: 'session' },
    };
  };
}

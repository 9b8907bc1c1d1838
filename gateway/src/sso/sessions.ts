import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { readCookie, SESSION_COOKIE } from './cookies.ts';
import type { SessionRecord, SsoStore } from './store/sso-store.ts';

/** A session's id as its cookie holds it; only its digest is stored. */
const sessionDigest = (id: string): string => createHash('sha256').update(id).digest('hex');

/** A new session (its id goes in the cookie, its record in the store) with a CSRF token of its own. */
export function newSession(
  { userId, userName, orgId }: Pick<SessionRecord, 'userId' | 'userName' | 'orgId'>,
  ttlMs: number,
  now = new Date(),
): { id: string; record: SessionRecord } {
  const id = randomBytes(32).toString('base64url');
  const record: SessionRecord = {
    digest: sessionDigest(id),
    userId,
    userName,
    orgId,
    csrfToken: randomBytes(32).toString('base64url'),
    createdAt: now,
    expiresAt: new Date(now.getTime() + ttlMs),
  };
  return { id, record };
}

/**
 * The request's session: `absent` without the cookie, `invalid` for one no live session has
 * (unknown, forged, ended, expired).
 */
export async function requestSession(
  store: Pick<SsoStore, 'findSession'>,
  req: Request,
  now = new Date(),
): Promise<{ kind: 'absent' } | { kind: 'invalid' } | { kind: 'live'; session: SessionRecord }> {
  const id = readCookie(req, SESSION_COOKIE);
  if (id === undefined || id === '') return { kind: 'absent' };
  // Ids are 43 characters of base64url: anything else is not looked up.
  const session = /^[\w-]{43}$/.test(id) ? await store.findSession(sessionDigest(id)) : null;
  if (!session || session.expiresAt <= now) return { kind: 'invalid' };
  return { kind: 'live', session };
}

/** Whether the request carries the session's CSRF token in X-CSRF-Token, compared in constant time. */
export function carriesCsrfToken(req: Request, session: SessionRecord): boolean {
  const given = Buffer.from(req.get('x-csrf-token') ?? '');
  const expected = Buffer.from(session.csrfToken);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

import { randomNonce, randomPKCECodeVerifier, randomState } from 'openid-client';
import express, { type Request, type Response, type Router } from 'express';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from '@perfwatch/common';
import { createAuditLog, type AuditLog } from '../audit-log/audit-log.ts';
import type { AuditLogStore } from '../audit-log/store/audit-log-store.ts';
import type { TeamsStore } from '../teams/store/teams-store.ts';
import { clearCookie, LOGIN_COOKIE, readCookie, SESSION_COOKIE, setCookie } from './cookies.ts';
import { LOGIN_TTL_MS, loginSeal, type LoginSeal } from './login-state.ts';
import { SignInFailed, type OidcClient } from './oidc-client.ts';
import { checkedSession } from './session-auth.ts';
import { newSession, requestSession } from './sessions.ts';
import { sessionView } from './session-view.ts';
import { signInFailedPage } from './sign-in-page.ts';
import { signInMember, type SsoMembersStore } from './sso-members.ts';
import type { SsoOptions } from './sso-options.ts';
import type { SsoStore } from './store/sso-store.ts';

/** The dashboard's single sign-on as the app mounts it (runtime.ts builds it from the settings). */
export interface SsoDeps {
  options: SsoOptions;
  client: OidcClient;
  store: SsoStore &
    SsoMembersStore &
    Pick<TeamsStore, 'findMembership' | 'findOrganisation'> &
    Pick<AuditLogStore, 'appendAuditEntry'>;
  logger: Logger;
}

// Path=/, as the __Host- prefix asks: only the callback reads it, for its ten minutes.
const LOGIN_PATH = '/';
/** Where the dashboard lives; a sign-in goes back to a path of this gateway only, never to another site. */
const returnPath = (given: unknown): string =>
  typeof given === 'string' && given.length <= 2_000 && /^\/(?![/\\])[^\s\\]*$/.test(given) ? given : '/';

/**
 * `/auth`: GET /auth/session (who is signed in; SSO or not, so the dashboard knows which
 * sign-in to offer), and with SSO configured the sign-in (GET /auth/sso/login, then the
 * provider, then GET /auth/sso/callback), POST /auth/session (the organisation to act in) and
 * POST /auth/logout.
 */
export function authRouter(sso: SsoDeps | undefined): Router {
  const router = express.Router();
  router.use('/auth', (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });
  if (!sso) {
    router.get('/auth/session', (_req, res) => void res.json({ sso: false, signedIn: false }));
    return router;
  }
  const seal = loginSeal(sso.options.clientSecret);
  const audit = createAuditLog({ store: sso.store });
  const json = express.json({ limit: '1kb' });
  router.get('/auth/sso/login', (req, res) => startSignIn(sso, seal, req, res));
  router.get('/auth/sso/callback', (req, res) => finishSignIn({ ...sso, seal, audit }, req, res));
  router.get('/auth/session', async (req, res) => {
    const found = await requestSession(sso.store, req);
    res.json(found.kind === 'live' ? await sessionView(sso.store, found.session) : { sso: true, signedIn: false });
  });
  router.post('/auth/session', json, async (req, res) => {
    const session = await checkedSession(sso.store, req);
    if (!session) throw new ApiError('UNAUTHORIZED', 'No session.', [`cookie ${SESSION_COOKIE}: required`]);
    const orgId = organisationChoice(req.body);
    if (!(await sso.store.findMembership(orgId, session.userId)))
      throw new ApiError('FORBIDDEN', 'Not a member of that organisation.', [`organisation: not one of yours`]);
    await sso.store.setSessionOrganisation(session.digest, orgId);
    res.json(await sessionView(sso.store, { ...session, orgId }));
  });
  router.post('/auth/logout', async (req, res) => {
    const found = await requestSession(sso.store, req);
    if (found.kind === 'live') {
      await checkedSession(sso.store, req);
      await sso.store.removeSession(found.session.digest);
    }
    clearCookie(res, SESSION_COOKIE, '/');
    res.status(204).end();
  });
  return router;
}

const organisationChoiceSchema = z.object({ organisation: z.string().min(1).max(100) });

function organisationChoice(body: unknown): string {
  const parsed = organisationChoiceSchema.safeParse(body);
  if (!parsed.success) throw new ApiError('BAD_REQUEST', 'Name the organisation.', ['organisation: required, its id']);
  return parsed.data.organisation;
}

/** Sends the browser to the provider, with this sign-in's state, nonce and PKCE verifier sealed in a cookie of its own. */
async function startSignIn(sso: SsoDeps, seal: LoginSeal, req: Request, res: Response): Promise<void> {
  const checks = { state: randomState(), nonce: randomNonce(), verifier: randomPKCECodeVerifier() };
  let url: URL;
  try {
    url = await sso.client.authorizationUrl(checks);
  } catch (error) {
    if (!(error instanceof SignInFailed)) throw error;
    return signInFailedPage(res, 503, error.message);
  }
  const state = { ...checks, returnTo: returnPath(req.query['returnTo']), expiresAt: Date.now() + LOGIN_TTL_MS };
  setCookie(res, LOGIN_COOKIE, seal.seal(state), { path: LOGIN_PATH, maxAge: LOGIN_TTL_MS / 1000 });
  res.redirect(302, url.href);
}

/**
 * The provider's redirect back: the sign-in's own checks, the code exchanged for a verified ID
 * token, the user and their memberships brought up to date from its groups, then a new session.
 */
async function finishSignIn(
  { seal, audit, ...sso }: SsoDeps & { seal: LoginSeal; audit: AuditLog },
  req: Request,
  res: Response,
): Promise<void> {
  const checks = seal.open(readCookie(req, LOGIN_COOKIE), new Date());
  clearCookie(res, LOGIN_COOKIE, LOGIN_PATH);
  if (!checks)
    return signInFailedPage(
      res,
      400,
      'This sign-in was not started here, or took longer than ten minutes; start again.',
    );
  const query = new URLSearchParams(req.originalUrl.split(/\?(.*)/s)[1] ?? '');
  let member;
  try {
    const identity = await sso.client.identity(query, checks);
    member = await signInMember(sso.store, identity, sso.options, audit);
    if (!member.ok) {
      sso.logger.info({ sso: { issuer: identity.issuer, subject: identity.subject } }, 'single sign-on refused');
      return signInFailedPage(res, 403, member.reason);
    }
  } catch (error) {
    if (!(error instanceof SignInFailed)) throw error;
    return signInFailedPage(res, 400, error.message);
  }
  const previous = await requestSession(sso.store, req);
  if (previous.kind === 'live') await sso.store.removeSession(previous.session.digest);
  await sso.store.removeExpiredSessions(new Date());
  const { userId, name: userName, memberships } = member;
  const { id, record } = newSession({ userId, userName, orgId: memberships[0]!.orgId }, sso.options.sessionTtlMs);
  await sso.store.addSession(record);
  setCookie(res, SESSION_COOKIE, id, { path: '/', maxAge: Math.floor(sso.options.sessionTtlMs / 1000) });
  sso.logger.info({ userId, session: record.digest.slice(0, 8) }, 'signed in by single sign-on');
  res.redirect(302, checks.returnTo);
}

import type { Request, Response } from 'express';

/**
 * The dashboard session's cookie (its value: the session id; only its digest is stored). `__Host-`:
 * browsers take it only with Secure and Path=/ and without a Domain, so a neighbouring subdomain
 * cannot plant one of its own (a session of the attacker's, or a sign-in's state).
 */
export const SESSION_COOKIE = '__Host-perfwatch_session';
/** The sealed state of a sign-in under way (login-state.ts), read only by the callback. */
export const LOGIN_COOKIE = '__Host-perfwatch_sso_login';

/** The value of cookie `name` in the request's Cookie header; undefined when absent. */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

interface CookieOptions {
  path: string;
  /** Seconds; 0 removes it. */
  maxAge: number;
}

/**
 * Sets a cookie only this gateway's pages send back: HttpOnly (no script reads it), Secure (only
 * over https; browsers take it from http://localhost too), SameSite=Lax (not on another site's
 * requests, only on its links into this one, which the provider's redirect back is).
 */
export function setCookie(res: Response, name: string, value: string, { path, maxAge }: CookieOptions): void {
  res.append('Set-Cookie', `${name}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; Secure; SameSite=Lax`);
}

export const clearCookie = (res: Response, name: string, path: string): void =>
  setCookie(res, name, '', { path, maxAge: 0 });

// The dashboard's client of /v1: the token lives in this tab's sessionStorage only, and goes
// out in the Authorization header, never in a URL. Signed in by single sign-on instead, the
// session's cookie goes along by itself and each request carries its CSRF token.

import { ssoSession } from './sso-session.js';

const TOKEN_KEY = 'perfwatch.token';

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(status, envelope) {
    super(envelope ? [envelope.message, ...(envelope.errors ?? [])].join(' ') : `HTTP ${status}`);
    this.status = status;
    // The envelope's lines ("runs: runs is a whole number from 1 to 9"), for forms to show by field.
    this.errors = envelope?.errors ?? [];
    this.summary = envelope?.message ?? this.message;
  }
}

/** A token's header, else a single sign-on session's CSRF token (its cookie is the browser's to send). */
function credentials(token) {
  const sso = ssoSession.current();
  return token || !sso ? { Authorization: token ?? '' } : { 'X-CSRF-Token': sso.csrfToken };
}

/** POST with a JSON body: the same parameters as GET, without URL-encoding anything. */
export function api(path, body = {}, token = session.token()) {
  return request('POST', path, body, token);
}

/**
 * Any method of /v1 (the settings pages' PATCH, PUT and DELETE too): GET and DELETE carry
 * `params` in the query string, the others as a JSON body.
 */
export async function request(method, path, params = {}, token = session.token()) {
  const inQuery = method === 'GET' || method === 'DELETE';
  const query = inQuery && Object.keys(params).length > 0 ? `?${new URLSearchParams(params)}` : '';
  const response = await fetch(`/v1/${path}${query}`, {
    method,
    headers: {
      ...credentials(token),
      Accept: 'application/json',
      ...(inQuery ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(inQuery ? {} : { body: JSON.stringify(params) }),
  });
  const json = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

/**
 * A GET of /v1 whose answer is not JSON (an artifact: NDJSON, a trace): the response once it is a
 * success, for the caller to read as text or as a file; a refusal throws as request() does.
 */
export async function fetchOk(path, params = {}, token = session.token()) {
  const response = await fetch(`/v1/${path}?${new URLSearchParams(params)}`, { headers: credentials(token) });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  return response;
}

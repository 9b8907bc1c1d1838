// The dashboard's client of /v1: the token lives in this tab's sessionStorage only, and goes
// out in the Authorization header, never in a URL.

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
  }
}

/** POST with a JSON body: the same parameters as GET, without URL-encoding anything. */
export async function api(path, body = {}, token = session.token()) {
  const response = await fetch(`/v1/${path}`, {
    method: 'POST',
    headers: { Authorization: token ?? '', 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

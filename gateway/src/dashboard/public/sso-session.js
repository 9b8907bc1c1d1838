// The dashboard's single sign-on session, when the gateway has SSO configured. Its cookie is
// HttpOnly: the page knows the session only through GET /auth/session, which also gives the CSRF
// token every request of the session carries in X-CSRF-Token (api.js adds it).

const SIGNED_OUT = { sso: false, signedIn: false };
let state = SIGNED_OUT;

export const ssoSession = {
  /** Whether the gateway offers single sign-on. */
  offered: () => state.sso,
  /** The signed-in session ({ user, organisation, organisations, csrfToken }), or null. */
  current: () => (state.signedIn ? state : null),
};

/** Asks the gateway who is signed in (once, as the page opens; again after a change). */
export async function loadSsoSession() {
  try {
    const response = await fetch('/auth/session', { headers: { Accept: 'application/json' } });
    state = response.ok ? await response.json() : SIGNED_OUT;
  } catch {
    state = SIGNED_OUT;
  }
  return state;
}

/** The session ended on the gateway (a 401): forgotten here too. */
export function forgetSsoSession() {
  state = { sso: state.sso, signedIn: false };
}

function post(path, body) {
  return fetch(path, {
    method: 'POST',
    headers: { 'X-CSRF-Token': state.csrfToken ?? '', 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
}

/** Ends the session on the gateway. */
export async function signOutSso() {
  if (state.signedIn) await post('/auth/logout').catch(() => undefined);
  forgetSsoSession();
}

/** Makes `id` the organisation the dashboard acts in; whether the gateway took it. */
export async function chooseOrganisation(id) {
  const response = await post('/auth/session', { organisation: id });
  if (response.ok) state = await response.json();
  return response.ok;
}

/** Where "Sign in with single sign-on" goes: the provider, then back to this very view. */
export const ssoSignInUrl = () => `/auth/sso/login?returnTo=${encodeURIComponent(`/${location.hash}`)}`;

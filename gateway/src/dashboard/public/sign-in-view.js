import { api, ApiError, session } from './api.js';
import { h } from './dom.js';
import { show } from './page.js';
import { ssoSession, ssoSignInUrl } from './sso-session.js';

/**
 * The token form, beside "Sign in with single sign-on" when the gateway offers it; `onSignedIn`
 * once the gateway has taken the token.
 */
export function signInView(onSignedIn, message) {
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    placeholder: 'pw_…',
    spellcheck: 'false',
  });
  const form = h(
    'form',
    { id: 'sign-in', class: 'card narrow' },
    h('h1', {}, 'Sign in'),
    h(
      'p',
      {},
      'Paste an API token (from ',
      h('code', {}, 'perfwatch admin create-token'),
      ' or printed by ',
      h('code', {}, 'npm start'),
      '). It stays in this browser tab.',
    ),
    h('label', { for: 'token' }, 'API token'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
    message ? h('p', { class: 'error', role: 'alert' }, message) : null,
  );
  const sso = ssoSession.offered()
    ? h(
        'div',
        { id: 'sso-sign-in', class: 'card narrow' },
        h('h2', {}, 'Single sign-on'),
        h('p', {}, "With your company's account, through its identity provider."),
        h('a', { class: 'button', href: ssoSignInUrl() }, 'Sign in with single sign-on'),
      )
    : null;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    try {
      await api('projects', {}, token);
    } catch (error) {
      signInView(
        onSignedIn,
        error instanceof ApiError && (error.status === 401 || error.status === 400)
          ? 'That token is not valid.'
          : error.message,
      );
      return;
    }
    session.signIn(token);
    onSignedIn();
  });
  show('Sign in', ...(sso ? [sso] : []), form);
  input.focus();
}

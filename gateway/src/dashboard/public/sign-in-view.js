import { api, ApiError, session } from './api.js';
import { h } from './dom.js';
import { show } from './page.js';

/** The token form; `onSignedIn` once the gateway has taken the token. */
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
  show('Sign in', form);
  input.focus();
}

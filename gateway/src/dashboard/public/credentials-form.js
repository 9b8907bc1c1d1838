import { api, request } from './api.js';
import { h } from './dom.js';
import { field, onSubmit } from './form-fields.js';

// A page's credentials (/v1/credentials): shown by their names only, never a value; set from a
// JSON object as `perfwatch admin set-auth --auth-file` reads it, or cleared.

const EXAMPLE = '{"cookies": [{"name": "session", "value": "…"}], "headers": {"Authorization": "Bearer …"}}';

function described(view) {
  if (!view.configured) return 'No credentials: the page is measured as a visitor sees it.';
  const parts = [
    view.cookies.length > 0 ? `cookies ${view.cookies.join(', ')}` : null,
    view.headers.length > 0 ? `headers ${view.headers.join(', ')}` : null,
    view.loginSteps > 0 ? `${view.loginSteps} login step${view.loginSteps === 1 ? '' : 's'}` : null,
  ].filter(Boolean);
  return `Credentials set: ${parts.join(' · ')}.`;
}

/** The JSON typed, or the text itself: the API then names what is wrong with it. */
function authOf(text) {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error('The credentials are not JSON: {"cookies": […], "headers": {…}, "login": […]}.');
  }
}

export async function credentialsSection(url) {
  const state = h(
    'p',
    { class: 'meta', id: 'credentials-state' },
    described(await request('GET', 'credentials', { url })),
  );
  const auth = h('textarea', {
    id: 'credentials-auth',
    name: 'auth',
    rows: 4,
    spellcheck: 'false',
    placeholder: EXAMPLE,
  });
  const setForm = h(
    'form',
    { id: 'credentials-form', class: 'card settings' },
    field(
      'auth',
      'New credentials (JSON)',
      auth,
      'Cookies and headers go to the project’s origin only. Sealed at rest.',
    ),
    h('button', { type: 'submit' }, 'Set credentials'),
  );
  onSubmit(
    setForm,
    () => api('credentials', { url, auth: authOf(auth.value) }),
    (view) => {
      auth.value = '';
      state.textContent = described(view);
    },
  );
  const clearForm = h(
    'form',
    { id: 'credentials-clear', class: 'inline' },
    h('button', { type: 'submit', class: 'secondary' }, 'Clear credentials'),
  );
  onSubmit(
    clearForm,
    () => api('credentials', { url, clear: true }),
    (view) => {
      state.textContent = described(view);
    },
  );
  return h('section', { id: 'credentials' }, h('h2', {}, 'Credentials'), state, setForm, clearForm);
}

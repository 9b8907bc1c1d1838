import { api, request } from './api.js';
import { h } from './dom.js';
import { field, onSubmit } from './form-fields.js';
import { crumbs, dataTable, show } from './page.js';

// The organisation's API tokens (/v1/tokens, admins): listed without their secrets, made (the
// secret shown this once), revoked by their prefix.

const SCOPES = ['read', 'ci', 'editor', 'admin'];

const state = (token) => (token.revokedAt ? 'revoked' : token.expired ? 'expired' : 'live');
const day = (iso) => (iso ? iso.slice(0, 10) : '—');

function tokenRow(token, onRevoked) {
  const revoke = h('form', { class: 'inline' }, h('button', { type: 'submit', class: 'secondary' }, 'Revoke'));
  onSubmit(revoke, () => request('DELETE', 'tokens', { prefix: token.prefix }), onRevoked);
  return h(
    'tr',
    { 'data-prefix': token.prefix, 'data-state': state(token) },
    h('td', {}, h('code', {}, `pw_${token.prefix}…`)),
    h('td', { class: 'wrap' }, token.label ?? ''),
    h('td', {}, token.scope),
    h('td', { class: 'wrap' }, token.projects ? token.projects.join(', ') : 'all'),
    h('td', {}, token.user ?? '—'),
    h('td', {}, day(token.createdAt)),
    h('td', {}, day(token.expiresAt)),
    h('td', {}, state(token)),
    h('td', {}, state(token) === 'live' ? revoke : null),
  );
}

function newTokenForm(onCreated) {
  const input = (name, attributes = {}) =>
    h('input', { id: `token-${name}`, name, spellcheck: 'false', ...attributes });
  const scope = h(
    'select',
    { id: 'token-scope', name: 'scope' },
    SCOPES.map((s) => h('option', { value: s }, s)),
  );
  const projects = h('textarea', { id: 'token-projects', name: 'projects', rows: 2, spellcheck: 'false' });
  const form = h(
    'form',
    { id: 'token-create', class: 'card settings' },
    field(
      'scope',
      'Scope',
      scope,
      'read: reads; ci: updates and annotations of its projects; editor, admin: that role.',
    ),
    field('projects', 'Projects (ci only)', projects, 'One project URL a line.'),
    field(
      'expires',
      'Expires',
      input('expires', { placeholder: '90d' }),
      'A duration (90d, 12h) or a date; empty: never.',
    ),
    field('label', 'Label', input('label', { placeholder: 'CI of the web app' })),
    h('button', { type: 'submit' }, 'Create token'),
  );
  onSubmit(
    form,
    () => {
      const urls = projects.value.split(/\s+/).filter(Boolean);
      const text = (name) => form.elements.namedItem(name).value.trim();
      return api('tokens', {
        scope: scope.value,
        ...(urls.length > 0 ? { projects: urls } : {}),
        ...(text('expires') ? { expires: text('expires') } : {}),
        ...(text('label') ? { label: text('label') } : {}),
      });
    },
    onCreated,
  );
  return form;
}

export async function tokensView(_params, created) {
  const { tokens } = await request('GET', 'tokens');
  show(
    'Tokens',
    crumbs(),
    h('h1', {}, 'API tokens'),
    created
      ? h(
          'p',
          { class: 'notice', id: 'new-token', role: 'status' },
          'Token created. Copy it now: it is shown this once. ',
          h('code', { class: 'secret' }, created.token),
        )
      : null,
    tokens.length > 0
      ? dataTable(
          { class: 'tokens' },
          ['Token', 'Label', 'Scope', 'Projects', 'For', 'Created', 'Expires', 'State', ''],
          tokens.map((t) => tokenRow(t, () => tokensView())),
        )
      : h('p', { class: 'empty' }, 'No tokens.'),
    h('h2', {}, 'New token'),
    newTokenForm((answer) => tokensView(undefined, answer)),
  );
}

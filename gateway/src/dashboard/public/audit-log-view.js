import { api } from './api.js';
import { h } from './dom.js';
import { crumbs, dataTable, link, show } from './page.js';

// The organisation's audit log (/v1/audit-log, admins): who changed what and when, the newest
// first, a page at a time (`next` handed back as `before`).

const actorOf = ({ name, via, tokenPrefix }) =>
  `${name ?? '(gone)'} · ${via === 'token' ? `token pw_${tokenPrefix}…` : 'dashboard'}`;
const detailsOf = (details) =>
  Object.entries(details)
    .map(([key, value]) => `${key}: ${value}`)
    .join(', ');

export async function auditLogView(params) {
  const before = params.get('before');
  const page = await api('audit-log', before ? { before } : {});
  show(
    'Audit log',
    crumbs(),
    h('h1', {}, 'Audit log'),
    page.entries.length > 0
      ? dataTable(
          { class: 'audit-log' },
          ['When (UTC)', 'Who', 'What', 'Target', 'Details'],
          page.entries.map((entry) =>
            h(
              'tr',
              { 'data-action': entry.action },
              h('td', {}, entry.at.replace('T', ' ').slice(0, 19)),
              h('td', {}, actorOf(entry.actor)),
              h('td', {}, entry.action),
              h('td', { class: 'wrap' }, entry.target),
              h('td', { class: 'wrap' }, detailsOf(entry.details)),
            ),
          ),
        )
      : h('p', { class: 'empty' }, 'Nothing recorded yet.'),
    h(
      'nav',
      { class: 'range', 'aria-label': 'Pages' },
      before ? h('a', { href: '#/audit-log' }, 'Newest') : null,
      page.next ? h('a', { href: link('audit-log', { before: page.next }), id: 'audit-older' }, 'Older') : null,
    ),
  );
}

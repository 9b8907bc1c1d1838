import { h, scoreClass } from './dom.js';

// What every view of the dashboard builds on: the one element they fill, links between routes
// (they live in the URL fragment), and the pieces several views share.

const view = document.getElementById('view');

export const link = (route, params) => `#/${route}?${new URLSearchParams(params)}`;

export function scoreBadge(score, label) {
  return h('span', { class: `score ${scoreClass(score)}`, title: label, 'data-score': score ?? '' }, score ?? '—');
}

export function show(title, ...content) {
  document.title = title ? `${title} · perfwatch` : 'perfwatch';
  view.replaceChildren(...content.filter((part) => part !== null && part !== undefined));
}

/** A table: a heading row, then `rows`. A heading is its text, or `[text, attributes]`. */
export function dataTable(attributes, headings, rows) {
  return h(
    'table',
    attributes,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headings.map((heading) => (Array.isArray(heading) ? h('th', heading[1], heading[0]) : h('th', {}, heading))),
      ),
    ),
    h('tbody', {}, rows),
  );
}

/** Where a page sits: Projects, then the project (`url`) and `more` links, each followed by a slash. */
export function crumbs(url, ...more) {
  const trail = [
    h('a', { href: '#/' }, 'Projects'),
    url ? h('a', { href: link('project', { url }) }, url) : null,
    ...more,
  ];
  return h(
    'p',
    { class: 'crumbs' },
    trail.filter(Boolean).flatMap((a) => [a, ' / ']),
  );
}

/** A card of one device and location; `kind` 'missing' for a cell without a result. */
export function cellCard(device, location, kind, ...content) {
  return h(
    'article',
    { class: kind ? `card cell ${kind}` : 'card cell', 'data-device': device, 'data-location': location },
    h('h2', {}, `${device} · ${location}`),
    ...content,
  );
}

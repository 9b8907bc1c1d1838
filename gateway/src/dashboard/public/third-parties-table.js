import { formatBytes, formatMs, h } from './dom.js';
import { dataTable } from './page.js';

// What each third party cost the median run (/v1/artifacts?kind=third-parties): its bytes,
// main-thread time and blocking time, the page's own entity marked. Each number is also in
// its cell's data-value as the API gave it, for scripts and the browser test.

const COLUMNS = [
  ['requests', 'Requests', (v) => (v === null || v === undefined ? '—' : String(v))],
  ['transferSize', 'Transfer', formatBytes],
  ['mainThreadTime', 'Main-thread time', formatMs],
  ['blockingTime', 'Blocking time', formatMs],
];

/** `entities` as the API lists them: [{entity, firstParty, transferSize, mainThreadTime, blockingTime, requests}]. */
export function thirdPartiesTable(entities) {
  if (entities.length === 0) return h('p', { class: 'empty' }, 'No requests attributed to any entity.');
  return h(
    'div',
    { class: 'runs-box' },
    dataTable(
      { class: 'third-parties' },
      ['Entity', ...COLUMNS.map(([, label]) => label)],
      entities.map((e) =>
        h(
          'tr',
          {
            'data-entity': e.entity,
            'data-first-party': e.firstParty ? 'true' : 'false',
            class: e.firstParty ? 'first-party' : '',
          },
          h('td', { class: 'entity' }, e.entity, e.firstParty ? h('span', { class: 'meta' }, ' (first party)') : null),
          COLUMNS.map(([field, , format]) =>
            h('td', { 'data-field': field, 'data-value': e[field] ?? '' }, format(e[field])),
          ),
        ),
      ),
    ),
  );
}

import { formatBytes, formatMs, h } from './dom.js';
import { dataTable } from './page.js';

// What /v1/compare found between the two median runs' requests and third parties (issue 35):
// requests added, removed and grown, and third parties whose cost changed. Every item carries
// data-change, data-url / data-entity and its numbers, for scripts and the browser test.

const CHANGES = [
  ['added', 'Requests added'],
  ['removed', 'Requests removed'],
  ['grown', 'Requests grown'],
];

/** A request's side: its bytes and how long it took. */
const sideText = (side) => (side ? `${formatBytes(side.transferSize)}, ${formatMs(side.duration)}` : '—');

function requestText(change, item) {
  const about = [item.entity, item.resourceType].filter(Boolean).join(', ');
  const cost =
    change === 'added'
      ? sideText(item.to)
      : change === 'removed'
        ? sideText(item.from)
        : `${sideText(item.from)} → ${sideText(item.to)}`;
  return [h('span', { class: 'request-url' }, item.url), about ? ` (${about})` : '', ` · ${cost}`];
}

function requestItem(change, item) {
  return h(
    'li',
    {
      'data-change': change,
      'data-url': item.url,
      'data-entity': item.entity ?? '',
      'data-from-bytes': item.from?.transferSize,
      'data-to-bytes': item.to?.transferSize,
    },
    requestText(change, item),
  );
}

/** The requests' changes, or why they could not be compared (an artifact missing or expired on a side). */
export function requestChanges(requests) {
  if (!requests) return null;
  if (requests.state === 'unavailable')
    return h('p', { class: 'meta', 'data-requests': 'unavailable' }, `Requests not compared: ${requests.reason}`);
  // A side cut at its size bound: what lay past the cut shows as added or removed.
  const cut = requests.truncated
    ? h(
        'p',
        { class: 'artifact-note', 'data-note': 'truncated' },
        'A side\'s requests were cut at their size bound: some "added" or "removed" may only lie past the cut.',
      )
    : null;
  return [
    cut,
    ...CHANGES.flatMap(([change, title]) => {
      const items = requests[change] ?? [];
      return [
        h('h3', {}, `${title} (${items.length})`),
        items.length === 0
          ? h('p', { class: 'empty', 'data-change': change }, 'None.')
          : h(
              'ul',
              { class: 'request-changes', 'data-change': change },
              items.map((item) => requestItem(change, item)),
            ),
      ];
    }),
  ];
}

const COSTS = [
  ['transferSize', 'Transfer', formatBytes],
  ['mainThreadTime', 'Main-thread time', formatMs],
  ['blockingTime', 'Blocking time', formatMs],
  ['requests', 'Requests', (v) => (v === null || v === undefined ? '—' : String(v))],
];

const entityChange = (e) => (e.from === null ? 'added' : e.to === null ? 'removed' : 'changed');

/** A third party's row: each cost from → to, its values in data-from and data-to. */
function thirdPartyRow(e) {
  return h(
    'tr',
    { 'data-entity': e.entity, 'data-change': entityChange(e) },
    h('td', { class: 'entity' }, e.entity, h('span', { class: 'meta' }, ` (${entityChange(e)})`)),
    COSTS.map(([field, , format]) =>
      h(
        'td',
        { 'data-field': field, 'data-from': e.from?.[field], 'data-to': e.to?.[field] },
        `${e.from ? format(e.from[field]) : '—'} → ${e.to ? format(e.to[field]) : '—'}`,
      ),
    ),
  );
}

/** The third parties whose cost changed; nothing when none did (or the compare did not say). */
export function thirdPartyChanges(thirdParties) {
  if (!thirdParties || thirdParties.length === 0) return null;
  return [
    h('h3', {}, 'Third parties whose cost changed'),
    h(
      'div',
      { class: 'runs-box' },
      dataTable(
        { class: 'third-party-changes' },
        ['Entity', ...COSTS.map(([, label]) => label)],
        thirdParties.map(thirdPartyRow),
      ),
    ),
  ];
}

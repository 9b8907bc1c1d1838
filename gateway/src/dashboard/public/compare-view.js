import { api } from './api.js';
import { h } from './dom.js';
import { formatScore } from './lighthouse-result.js';
import { cellCard, crumbs, dataTable, link, show } from './page.js';
import { requestChanges, thirdPartyChanges } from './request-changes.js';
import { revisionLine } from './revision.js';

// Two snapshots side by side, of one project or of two (a preview's against production's): their
// medians' metrics, whether each difference is beyond run-to-run noise, and the audits and
// opportunities that changed most, and the median runs' requests and third parties that changed
// (request-changes.js). Opened from the project's picker or from a stable link
// (`#/compare?url=…&baseUrl=…&from=…&to=…&device=…&location=…`, common's compareViewLink builds
// it for forge reports) whose dates may be `latest`: the view shows the dates /v1/compare found.

const COMPARE_FORMAT = { performance: formatScore, cls: (v) => v.toFixed(3) };
function compareValue(metric, value, signed = false) {
  if (value === null || value === undefined) return '—';
  const text = (COMPARE_FORMAT[metric] ?? ((v) => `${Math.round(v)} ms`))(value);
  return signed && value > 0 ? `+${text}` : text;
}

function noiseText(significance) {
  if (significance.test === 'not enough runs')
    return `not enough runs (${significance.runs.from} and ${significance.runs.to}; 3 a side)`;
  return `${significance.beyondNoise ? 'yes' : 'no'} (p = ${significance.p.toFixed(3)})`;
}

/** /v1/compare's parameters from the link's, by the same names; those not given are left out. */
function compareRequest(params) {
  const one = (name) => params.get(name) ?? undefined;
  const locations = params.getAll('location');
  return {
    url: one('url'),
    baseUrl: one('baseUrl'),
    from: one('from'),
    to: one('to'),
    device: one('device'),
    location: locations.length > 0 ? locations : undefined,
  };
}

/** One side: which project, the snapshot's date (a link to it) and the code change it measured. */
function sideLine(side, label, url, date, revision) {
  return h(
    'p',
    { class: 'meta compare-side', 'data-snapshot': side },
    `${label}: `,
    h('a', { href: link('project', { url }), class: 'side-url' }, url),
    ' at ',
    h('a', { href: link('snapshot', { url, date }), class: 'side-date' }, date),
    ' UTC',
    // The code change as the other views show it, with the badge of a pull request's snapshot.
    revision ? [' · ', revisionLine(revision, 'span')] : null,
  );
}

export async function compareView(params) {
  const request = compareRequest(params);
  const result = await api('compare', request);
  const { url, from, to } = result;
  const baseUrl = result.baseUrl ?? url;
  const cards = [
    ...result.cells.map((cell) => compareCard(cell, `${baseUrl} at ${from}`, `${url} at ${to}`)),
    ...result.unmatched.map((u) =>
      cellCard(
        u.device,
        u.location,
        'missing',
        h('p', {}, `Only in the ${u.onlyIn === 'from' ? 'first' : 'second'} snapshot.`),
      ),
    ),
  ];
  show(
    result.baseUrl ? `${baseUrl} → ${url}` : `${url}: ${from} → ${to}`,
    crumbs(url),
    // Two projects: which two is the news (the sides' dates may well be the same second).
    h('h1', {}, result.baseUrl ? `${baseUrl} → ${url}` : `${from} → ${to} UTC`),
    sideLine('from', result.baseUrl ? 'First (base)' : 'First', baseUrl, from, result.fromRevision),
    sideLine('to', result.baseUrl ? 'Second (head)' : 'Second', url, to, result.toRevision),
    h(
      'p',
      { class: 'meta' },
      "Median runs side by side. A difference is beyond run-to-run noise when a Mann-Whitney U test on both snapshots' reliable runs gives p < 0.05 (three runs a side at least; four to ever reach it).",
    ),
    h('div', { class: 'cells' }, cards),
  );
}

/** A cell of both snapshots: its medians' metrics side by side, and what changed most. */
function compareCard(cell, from, to) {
  return cellCard(
    cell.device,
    cell.location,
    '',
    h(
      'div',
      { class: 'runs-box' },
      dataTable(
        { class: 'compare' },
        ['Metric', ['First', { title: from }], ['Second', { title: to }], 'Difference', 'Beyond noise?'],
        cell.metrics.map((m) =>
          h(
            'tr',
            { 'data-metric': m.metric, class: m.significance.beyondNoise ? 'beyond-noise' : '' },
            h('td', {}, m.metric),
            h('td', { 'data-side': 'from' }, compareValue(m.metric, m.from)),
            h('td', { 'data-side': 'to' }, compareValue(m.metric, m.to)),
            h('td', { 'data-side': 'difference' }, compareValue(m.metric, m.difference, true)),
            h('td', { 'data-side': 'noise' }, noiseText(m.significance)),
          ),
        ),
      ),
    ),
    changedList(
      'Audits that changed most',
      'changed-audits',
      cell.audits,
      (a) => `${a.title}: ${a.from ?? '—'} → ${a.to ?? '—'}`,
    ),
    changedList(
      'Opportunities that changed most',
      'changed-opportunities',
      cell.opportunities,
      (o) => `${o.title}: ${o.fromMs} ms → ${o.toMs} ms to save`,
    ),
    requestChanges(cell.requests),
    thirdPartyChanges(cell.thirdParties),
  );
}

/** A heading and a list of the audits in `items`, each line `text` of it; nothing when there are none. */
function changedList(title, className, items, text) {
  if (items.length === 0) return null;
  return [
    h('h3', {}, title),
    h(
      'ul',
      { class: className },
      items.map((item) => h('li', { 'data-audit': item.id }, text(item))),
    ),
  ];
}

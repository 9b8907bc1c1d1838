import { api } from './api.js';
import { h } from './dom.js';
import { formatScore } from './lighthouse-result.js';
import { cellCard, crumbs, dataTable, show } from './page.js';

// Two snapshots of a project side by side: their medians' metrics, whether each difference is
// beyond run-to-run noise, and the audits and opportunities that changed most.

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

export async function compareView(params) {
  const [url, from, to] = ['url', 'from', 'to'].map((name) => params.get(name));
  const result = await api('compare', { url, from, to });
  const cards = [
    ...result.cells.map((cell) => compareCard(cell, from, to)),
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
    `${url}: ${from} → ${to}`,
    crumbs(url),
    h('h1', {}, `${from} → ${to} UTC`),
    h('p', { class: 'meta' }, `First: ${from} · second: ${to}`),
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

import { api } from './api.js';
import { formatMs, h } from './dom.js';
import { dataTable, link, scoreBadge, show } from './page.js';
import { trendChart } from './trend-chart.js';

// A site's page (issue 34): its groups (route templates) with the medians of their sampled
// pages' latest snapshots per device and their budget failures, a trend per group, the worst
// pages, and what the last discovery added and lost: /v1/sites/{id}/overview as it answers.
// Every value cell carries its number in data-value, so a test compares it with the API's.

const valueCell = (metric, value, text) =>
  h('td', { 'data-metric': metric, 'data-value': value ?? '' }, value === null ? '—' : text);

const metricCells = (m) => [
  h('td', { 'data-metric': 'score', 'data-value': m.score ?? '' }, scoreBadge(m.score, 'Median performance score')),
  valueCell('lcp', m.lcp, formatMs(m.lcp)),
  valueCell('tbt', m.tbt, formatMs(m.tbt)),
  valueCell('cls', m.cls, m.cls?.toFixed(3)),
];

function groupRows(group) {
  return group.devices.map((d, i) =>
    h(
      'tr',
      { 'data-group': group.group, 'data-device': d.device, class: group.measured ? null : 'unmeasured' },
      i === 0
        ? h(
            'th',
            { scope: 'row', rowspan: group.devices.length },
            group.group,
            h('br'),
            h('small', {}, `${group.pages} pages`),
          )
        : null,
      h('td', {}, d.device),
      ...metricCells(d),
      valueCell('budgetFailures', d.budgetFailures, String(d.budgetFailures)),
      h(
        'td',
        { 'data-metric': 'measuredPages', 'data-value': d.measuredPages },
        group.measured ? d.measuredPages : 'not measured yet',
      ),
    ),
  );
}

const groupsTable = (groups) =>
  dataTable(
    { class: 'site-groups', id: 'site-groups' },
    ['Group', 'Device', 'Score', 'LCP', 'TBT', 'CLS', 'Budget failures', 'Measured pages'],
    groups.flatMap(groupRows),
  );

const pageLink = (url) => h('a', { href: link('project', { url }) }, url);

const worstTable = (pages) =>
  dataTable(
    { class: 'site-worst', id: 'site-worst' },
    ['Page', 'Group', 'Device', 'Score', 'LCP', 'TBT', 'CLS', 'Budget failures'],
    pages.map((p) =>
      h(
        'tr',
        { 'data-url': p.url, 'data-device': p.device },
        h('td', {}, pageLink(p.url)),
        h('td', {}, p.group),
        h('td', {}, p.device),
        ...metricCells(p),
        valueCell('budgetFailures', p.budgetFailures, String(p.budgetFailures)),
      ),
    ),
  );

const groupTrend = (group) =>
  h(
    'div',
    { class: 'site-trend', 'data-group': group.group },
    trendChart({
      kpi: 'score',
      title: `${group.group}: median score per day`,
      format: (v) => String(Math.round(v)),
      max: 100,
      series: group.trend.map((t) => ({
        name: t.device,
        points: t.points.map((p) => ({ date: `${p.day}T00:00:00`, value: p.score })),
      })),
    }),
  );

const pageList = (id, title, urls) =>
  h(
    'section',
    { id },
    h('h2', {}, `${title} (${urls.length})`),
    urls.length === 0
      ? h('p', { class: 'empty' }, 'None.')
      : h(
          'ul',
          {},
          urls.map((url) => h('li', { 'data-url': url }, url)),
        ),
  );

export async function siteView(params) {
  const id = params.get('id') ?? '';
  const overview = await api(`sites/${encodeURIComponent(id)}/overview`);
  const { site, groups } = overview;
  const discovered = site.discoveredAt ? `Pages last discovered ${site.discoveredAt}.` : 'Not discovered yet.';
  show(
    site.origin,
    h('p', { class: 'crumbs' }, h('a', { href: '#/sites' }, 'Sites'), ' / '),
    h('h1', {}, site.origin),
    h('p', { class: 'meta' }, discovered),
    h('h2', {}, 'Groups'),
    groups.length === 0 ? h('p', { class: 'empty' }, 'No pages yet.') : groupsTable(groups),
    h('h2', {}, 'Worst pages'),
    overview.worstPages.length === 0
      ? h('p', { class: 'empty' }, 'No page measured yet.')
      : worstTable(overview.worstPages),
    h('h2', {}, 'Trends'),
    h('div', { class: 'charts site-trends' }, groups.filter((g) => g.trend.length > 0).map(groupTrend)),
    pageList('site-added', 'New pages', overview.added),
    pageList('site-gone', 'Removed pages', overview.gone),
  );
}

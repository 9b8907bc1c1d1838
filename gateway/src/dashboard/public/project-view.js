import { api } from './api.js';
import { h } from './dom.js';
import { budgetLine } from './budget-line.js';
import { auditValue, categoryScore, CATEGORIES, METRICS } from './lighthouse-result.js';
import { crumbs, dataTable, link, scoreBadge, show } from './page.js';
import { revisionLine } from './revision.js';
import { trends } from './trends.js';

// One project: its budgets, the latest scores per device and location, trends over a range of
// days, and its snapshots, with a picker of two to compare.

const RANGES = [7, 30, 90, 365];
const day = (offset = 0) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

export async function projectView(params) {
  const url = params.get('url');
  const days = Number(params.get('days') ?? 30);
  const { project, dates, cells, records, annotations, budgets } = await projectData(url, days);
  show(
    url,
    crumbs(),
    h('h1', { class: 'url' }, url),
    h(
      'p',
      { class: 'meta' },
      `${project.locations.join(', ')} · default ${project.defaultLocation} · ${project.runs} run${project.runs === 1 ? '' : 's'} per update`,
      ' · ',
      h('a', { href: link('project/settings', { url }), id: 'settings-link' }, 'Settings'),
    ),
    budgetLine(budgets),
    h(
      'section',
      { id: 'latest' },
      h('h2', {}, 'Latest'),
      cells.length > 0
        ? latestTable(url, cells)
        : h('p', { class: 'empty' }, 'No snapshot yet. Run an update: ', h('code', {}, `perfwatch update ${url}`)),
    ),
    h('section', { id: 'trends' }, h('h2', {}, 'Trends'), rangeNav(url, days), ...trends(url, records, annotations)),
    snapshotsSection(url, dates),
  );
}

/** What a project's page shows: the project, its snapshots' dates, the latest results, `days` of records, markers and budgets. */
async function projectData(url, days) {
  const { projects } = await api('projects');
  const project = projects.find((p) => p.url === url);
  if (!project) throw new Error(`No project of yours has the URL ${url}.`);
  const dates = await api('updates', { url });
  const [cells, records, { annotations }, budgets] = await Promise.all([
    latestResults(url, dates),
    api('overview', {
      dateRange: { startDate: day(1 - days), endDate: day() },
      domain: project.domain,
      sections: ['lighthouse', 'crux'],
    }),
    api('annotations', { url, from: `${day(1 - days)}T00:00:00`, to: `${day(1)}T00:00:00` }),
    api('budgets', { url }),
  ]);
  return { project, dates, cells, records, annotations, budgets };
}

function rangeNav(url, days) {
  return h(
    'nav',
    { class: 'range', 'aria-label': 'Trend range' },
    'Trends over ',
    RANGES.map((n) =>
      n === days ? h('strong', {}, `${n} days`) : h('a', { href: link('project', { url, days: n }) }, `${n} days`),
    ),
  );
}

/** The project's snapshots, newest first, one line per date whatever its devices. */
function snapshotsSection(url, dates) {
  const snapshots = [
    ...(dates.mobile ?? []).map((d) => ({ ...d, device: 'mobile' })),
    ...(dates.desktop ?? []).map((d) => ({ ...d, device: 'desktop' })),
  ].sort((a, b) => (a.date < b.date ? 1 : -1));
  const uniqueDates = [...new Map(snapshots.map((d) => [d.date, d])).values()];
  return h(
    'section',
    { id: 'snapshots' },
    h('h2', {}, 'Snapshots'),
    uniqueDates.length >= 2 ? comparePicker(url, uniqueDates) : null,
    h(
      'ul',
      { class: 'snapshots' },
      uniqueDates.map((d) =>
        h(
          'li',
          { 'data-date': d.date },
          h('a', { href: link('snapshot', { url, date: d.date }) }, d.date),
          ` · ${d.updateType}`,
          revisionLine(d.revision, 'span'),
        ),
      ),
    ),
  );
}

/** The latest snapshot of each device, read back whole. */
async function latestResults(url, dates) {
  const cells = [];
  for (const device of ['mobile', 'desktop']) {
    const latest = dates[device]?.at(-1);
    if (!latest) continue;
    const result = await api('audit', { url, date: latest.date, device });
    for (const [location, cell] of Object.entries(result[device] ?? {}))
      cells.push({ device, location, date: latest.date, cell });
  }
  return cells;
}

function latestTable(url, cells) {
  return dataTable(
    { class: 'latest' },
    [
      'Device',
      'Location',
      ...CATEGORIES.map(([, label]) => label),
      ...METRICS.slice(0, 4).map(([, label]) => label),
      'Snapshot (UTC)',
    ],
    cells.map(({ device, location, date, cell }) => {
      const lhr = cell.lighthouse;
      return h(
        'tr',
        { 'data-device': device, 'data-location': location },
        h('td', {}, device),
        h('td', {}, location),
        ...CATEGORIES.map(([id, label]) => h('td', { 'data-category': id }, scoreBadge(categoryScore(lhr, id), label))),
        ...METRICS.slice(0, 4).map(([id, , format]) => h('td', { 'data-metric': id }, format(auditValue(lhr, id)))),
        h('td', {}, h('a', { href: link('snapshot', { url, date }) }, date)),
      );
    }),
  );
}

/** Two snapshot dates to compare, the older one first by default. */
function comparePicker(url, dates) {
  const options = (selected) =>
    dates.map((d) => h('option', { value: d.date, selected: d.date === selected }, `${d.date} · ${d.updateType}`));
  const from = h('select', { id: 'compare-from', 'aria-label': 'First snapshot' }, options(dates[1].date));
  const to = h('select', { id: 'compare-to', 'aria-label': 'Second snapshot' }, options(dates[0].date));
  return h(
    'form',
    {
      id: 'compare',
      class: 'compare-picker',
      onsubmit: (event) => {
        event.preventDefault();
        location.hash = link('compare', { url, from: from.value, to: to.value });
      },
    },
    'Compare ',
    from,
    ' with ',
    to,
    ' ',
    h('button', { type: 'submit' }, 'Compare'),
  );
}

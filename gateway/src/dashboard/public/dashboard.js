import { api, ApiError, session } from './api.js';
import { formatMs, h, scoreClass } from './dom.js';
import { statusStrip, trendChart } from './trend-chart.js';

// perfwatch's dashboard: a token sign-in, the caller's projects, per project the latest scores
// per device and location, trends from /v1/overview, snapshots from /v1/audit, and the full
// Lighthouse report drawn by Lighthouse's own renderer. Routes live in the URL fragment.

const view = document.getElementById('view');
const signOutButton = document.getElementById('sign-out');

const CATEGORIES = [
  ['performance', 'Performance'],
  ['accessibility', 'Accessibility'],
  ['best-practices', 'Best practices'],
  ['seo', 'SEO'],
];
const METRICS = [
  ['largest-contentful-paint', 'LCP', formatMs],
  ['first-contentful-paint', 'FCP', formatMs],
  ['total-blocking-time', 'TBT', formatMs],
  ['cumulative-layout-shift', 'CLS', (v) => (v === null || v === undefined ? '—' : v.toFixed(3))],
  ['speed-index', 'Speed Index', formatMs],
];
const RANGES = [7, 30, 90, 365];

const link = (route, params) => `#/${route}?${new URLSearchParams(params)}`;
const categoryScore = (lhr, id) =>
  typeof lhr.categories?.[id]?.score === 'number' ? Math.round(lhr.categories[id].score * 100) : null;
const auditValue = (lhr, id) => lhr.audits?.[id]?.numericValue ?? null;
const day = (offset = 0) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

function scoreBadge(score, label) {
  return h('span', { class: `score ${scoreClass(score)}`, title: label, 'data-score': score ?? '' }, score ?? '—');
}

function show(title, ...content) {
  document.title = title ? `${title} · perfwatch` : 'perfwatch';
  view.replaceChildren(...content);
}

function failure(error) {
  if (error instanceof ApiError && error.status === 401) {
    session.signOut();
    location.hash = '#/';
    return;
  }
  show('Error', h('p', { class: 'error', role: 'alert' }, error.message));
}

/** A table: a heading row, then `rows`. A heading is its text, or `[text, attributes]`. */
function dataTable(attributes, headings, rows) {
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
function crumbs(url, ...more) {
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
function cellCard(device, location, kind, ...content) {
  return h(
    'article',
    { class: kind ? `card cell ${kind}` : 'card cell', 'data-device': device, 'data-location': location },
    h('h2', {}, `${device} · ${location}`),
    ...content,
  );
}

// ---- sign in ------------------------------------------------------------------------------

function signInView(message) {
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    placeholder: 'pw_…',
    spellcheck: 'false',
  });
  const form = h(
    'form',
    { id: 'sign-in', class: 'card narrow' },
    h('h1', {}, 'Sign in'),
    h(
      'p',
      {},
      'Paste an API token (from ',
      h('code', {}, 'perfwatch admin create-token'),
      ' or printed by ',
      h('code', {}, 'npm start'),
      '). It stays in this browser tab.',
    ),
    h('label', { for: 'token' }, 'API token'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
    message ? h('p', { class: 'error', role: 'alert' }, message) : null,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    try {
      await api('projects', {}, token);
    } catch (error) {
      signInView(
        error instanceof ApiError && (error.status === 401 || error.status === 400)
          ? 'That token is not valid.'
          : error.message,
      );
      return;
    }
    session.signIn(token);
    route();
  });
  show('Sign in', form);
  input.focus();
}

// ---- projects -----------------------------------------------------------------------------

async function projectsView() {
  const { projects } = await api('projects');
  const list = h('ul', { class: 'projects' });
  for (const project of projects) {
    list.append(
      h(
        'li',
        { class: 'card' },
        h('a', { href: link('project', { url: project.url }), class: 'project-link' }, project.url),
        h(
          'p',
          { class: 'meta' },
          `${project.locations.join(', ')} · ${project.runs} run${project.runs === 1 ? '' : 's'} per update${project.schedule ? ` · schedule ${project.schedule} (UTC)` : ''}`,
        ),
      ),
    );
  }
  show(
    'Projects',
    h('h1', {}, 'Projects'),
    projects.length > 0
      ? list
      : h('p', {}, 'No projects yet: add one with ', h('code', {}, 'perfwatch admin add-project'), '.'),
  );
}

// ---- one project --------------------------------------------------------------------------

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

/** Points `{ name, date, value }` as chart series: a line per name, in the points' order. */
function seriesOf(points, extra = {}) {
  const byName = new Map();
  for (const { name, date, value } of points) {
    if (!byName.has(name)) byName.set(name, []);
    byName.get(name).push({ date, value });
  }
  return [...byName].map(([name, linePoints]) => ({ name, points: linePoints, ...extra }));
}

/** A Lighthouse KPI's values (`pick` of its record's data) over time: a line per device/location. */
function labSeries(records, kpi, pick) {
  return seriesOf(
    records
      .filter((r) => r.section === 'LIGHTHOUSE' && r.kpi === kpi)
      .map((r) => ({ name: `${r.device}/${r.location}`, date: r.date, value: pick(r.data) }))
      .filter((point) => typeof point.value === 'number'),
  );
}

/**
 * Field data (CrUX's p75 of real users over 28 days) is per page and device, not per location:
 * one line per device beside the lab lines, from the records of KPI version 2.
 */
function fieldSeries(records, metric) {
  const seen = new Set();
  const points = [];
  for (const r of records) {
    if (r.section !== 'CRUX' || r.kpi !== `url_${metric}_p75`) continue;
    const value = Number(r.data);
    const key = `${r.device} ${r.date}`;
    if (r.data === 'NO_DATA' || !Number.isFinite(value) || seen.has(key)) continue;
    seen.add(key);
    points.push({ name: `field p75 · ${r.device}`, date: r.date, value });
  }
  return seriesOf(points, { field: true });
}

const score = (v) => String(Math.round(v));
/**
 * The trend charts in their order: `lab` names the Lighthouse record and its field, `field` the
 * CrUX metric plotted beside it. The lab Core Web Vitals (KPI version 2) carry web.dev's
 * good / needs improvement / poor bands.
 */
const TREND_CHARTS = [
  { kpi: 'performance', title: 'Performance score', format: score, max: 100, lab: ['performance', 'score'] },
  {
    kpi: 'lcp',
    title: 'Largest Contentful Paint',
    lab: ['performance', 'lcp'],
    field: 'lcp',
    bands: { good: 2500, poor: 4000 },
  },
  { kpi: 'tbt', title: 'Total Blocking Time', lab: ['performance', 'tbt'], bands: { good: 200, poor: 600 } },
  {
    kpi: 'cls',
    title: 'Cumulative Layout Shift',
    format: (v) => v.toFixed(2),
    lab: ['performance', 'cls'],
    field: 'cls',
    bands: { good: 0.1, poor: 0.25 },
  },
  { kpi: 'fcp', title: 'First Contentful Paint', lab: ['performance', 'fcp'], field: 'fcp' },
  { kpi: 'inp', title: 'Interaction to Next Paint (field p75)', field: 'inp', bands: { good: 200, poor: 500 } },
  { kpi: 'si', title: 'Speed Index', lab: ['performance', 'si'] },
  { kpi: 'tti', title: 'Time to Interactive', lab: ['performance', 'tti'] },
  { kpi: 'accessibility', title: 'Accessibility score', format: score, max: 100, lab: ['accessibility', 'score'] },
  { kpi: 'best_practices', title: 'Best practices score', format: score, max: 100, lab: ['best_practices', 'score'] },
  { kpi: 'seo', title: 'SEO score', format: score, max: 100, lab: ['seo', 'score'] },
];

/** One chart per Lighthouse KPI, a line per device/location; CrUX assessments as a table. */
function trends(url, records, annotations = []) {
  const mine = records.filter((r) => r.url === url);
  const charts = TREND_CHARTS.map(({ lab, field, format = formatMs, ...chart }) =>
    trendChart({
      ...chart,
      format,
      series: [
        ...(lab ? labSeries(mine, lab[0], (data) => data[lab[1]]) : []),
        ...(field ? fieldSeries(mine, field) : []),
      ],
      annotations,
    }),
  );
  const markers = annotations.length === 0 ? null : annotationList(annotations);
  return [
    h('div', { class: 'charts' }, charts),
    markers ? h('h3', {}, 'Deploy markers') : null,
    markers,
    h('h3', {}, 'CrUX field data'),
    ...cruxSection(mine),
  ];
}

/** The assessments (PASSED / FAILED / NO_DATA) of each snapshot; the p75 records are plotted with the lab lines. */
function cruxSection(records) {
  const crux = records.filter((r) => r.section === 'CRUX' && (r.kpi === 'url' || r.kpi === 'origin'));
  if (crux.length === 0)
    return [
      h('p', { class: 'empty' }, 'No CrUX records in this range (the gateway asks CrUX only with CRUX_API_KEY set).'),
    ];
  const byRow = new Map();
  for (const r of crux) {
    const key = `${r.date} ${r.device}/${r.location}`;
    byRow.set(key, { ...(byRow.get(key) ?? { date: r.date, where: `${r.device}/${r.location}` }), [r.kpi]: r.data });
  }
  const strip = (kpi, title) =>
    statusStrip({
      kpi: `crux-${kpi}`,
      title,
      series: seriesOf(
        crux
          .filter((r) => r.kpi === kpi)
          .map((r) => ({ name: `${r.device}/${r.location}`, date: r.date, value: String(r.data) })),
      ),
    });
  const badge = (value) =>
    h('span', { class: `cwv cwv-${String(value ?? 'NO_DATA').toLowerCase()}` }, value ?? 'NO_DATA');
  return [
    h(
      'div',
      { class: 'charts' },
      strip('url', 'CrUX: page passes Core Web Vitals'),
      strip('origin', 'CrUX: origin passes Core Web Vitals'),
    ),
    dataTable(
      { class: 'crux' },
      ['Snapshot (UTC)', 'Device/location', 'Page (Core Web Vitals)', 'Origin'],
      [...byRow.values()]
        .reverse()
        .map((row) =>
          h(
            'tr',
            { 'data-date': row.date },
            h('td', {}, row.date),
            h('td', {}, row.where),
            h('td', { 'data-kpi': 'url' }, badge(row.url)),
            h('td', { 'data-kpi': 'origin' }, badge(row.origin)),
          ),
        ),
    ),
  ];
}

/** The deploy markers in the range, with their links. */
function annotationList(annotations) {
  return h(
    'ul',
    { class: 'annotations' },
    annotations.map((a) =>
      h(
        'li',
        { 'data-date': a.date },
        h('span', { class: 'annotation-date' }, `${a.date} UTC`),
        ' · ',
        a.link ? h('a', { href: a.link, rel: 'noopener noreferrer' }, a.text) : a.text,
      ),
    ),
  );
}

async function projectView(params) {
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
        h('li', {}, h('a', { href: link('snapshot', { url, date: d.date }) }, d.date), ` · ${d.updateType}`),
      ),
    ),
  );
}

const BUDGET_LABELS = {
  performance: 'performance ≥',
  accessibility: 'accessibility ≥',
  'best-practices': 'best practices ≥',
  seo: 'SEO ≥',
  lcp: 'LCP ≤',
  fcp: 'FCP ≤',
  tbt: 'TBT ≤',
  cls: 'CLS ≤',
  si: 'Speed Index ≤',
  tti: 'TTI ≤',
  ttfb: 'server response ≤',
  bytes: 'total bytes ≤',
};
const budgetValue = (key, value) =>
  ['performance', 'accessibility', 'best-practices', 'seo', 'cls'].includes(key)
    ? String(value)
    : key === 'bytes'
      ? `${value} B`
      : `${value} ms`;

/** What every snapshot of the project is checked against (perfwatch admin set-budgets, /v1/budgets). */
function budgetLine({ budgets, maxRegression }) {
  const parts = [
    ...Object.entries(budgets).map(([key, value]) => `${BUDGET_LABELS[key] ?? key} ${budgetValue(key, value)}`),
    ...Object.entries(maxRegression).map(
      ([key, value]) =>
        `${key} regresses at most ${value}${['performance', 'accessibility', 'best-practices', 'seo'].includes(key) ? ' points' : ' %'}`,
    ),
  ];
  return h(
    'p',
    { class: 'meta budgets', id: 'budgets' },
    parts.length > 0
      ? `Budgets: ${parts.join(' · ')}`
      : 'No budgets: set them with perfwatch admin set-budgets or /v1/budgets.',
  );
}

/** A cell's budget checks as the gateway stored them: each with its state, and the event it announced. */
function checksList(cell) {
  if (!cell.checks?.length) return null;
  return h(
    'ul',
    { class: 'checks' },
    cell.checks.map((c) => {
      const confirmation =
        c.confirmation === undefined
          ? ''
          : c.confirmation === null
            ? ' · the confirmation run failed'
            : ` · confirmation run ${c.confirmation.pass ? 'passed' : 'failed'}`;
      const event = c.event ? ` · ${c.event === 'budget.failed' ? 'alert sent' : 'recovery sent'}` : '';
      return h(
        'li',
        { class: c.pass ? 'check-pass' : 'check-fail', 'data-check': `${c.kind}:${c.key}`, 'data-state': c.state },
        `${c.pass ? '✓' : '✗'} ${c.message}${confirmation}${event}`,
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

// ---- two snapshots side by side -------------------------------------------------------------

const COMPARE_FORMAT = { performance: score, cls: (v) => v.toFixed(3) };
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

async function compareView(params) {
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

// ---- one snapshot -------------------------------------------------------------------------

function verdictBadge(run) {
  if (run.verdict === 'suspect')
    return h('span', { class: 'verdict verdict-suspect', title: (run.reasons ?? []).join('\n') }, 'suspect');
  return run.verdict ? h('span', { class: 'verdict verdict-reliable' }, run.verdict) : null;
}

function runsTable(cell) {
  return h(
    'div',
    { class: 'runs-box' },
    dataTable(
      { class: 'runs' },
      ['Run', 'Performance', 'FCP', 'LCP', 'TBT', 'CLS', 'Agent'],
      cell.runs.flatMap((run, index) => runRows(run, index, index + 1 === cell.median)),
    ),
  );
}

/** A run's row, and under it why the run is doubted, if it is. */
function runRows(run, index, median) {
  const notes = [run.retestOf ? `re-test of ${run.retestOf}` : null, median ? 'median' : null]
    .filter(Boolean)
    .join(', ');
  // The verdict sits beside the run's number, where a narrow card (the table scrolls) still shows it.
  const row = h(
    'tr',
    {
      class: [median ? 'median' : '', run.verdict === 'suspect' ? 'suspect' : ''].join(' ').trim(),
      'data-verdict': run.verdict ?? '',
    },
    h(
      'td',
      { class: 'run' },
      h('span', { class: 'run-number' }, `${index + 1}${notes ? ` (${notes})` : ''}`),
      ' ',
      verdictBadge(run),
    ),
    h('td', {}, scoreBadge(run.performance, 'performance')),
    h('td', {}, formatMs(run.fcp)),
    h('td', {}, formatMs(run.lcp)),
    h('td', {}, formatMs(run.tbt)),
    h('td', {}, run.cls?.toFixed(3) ?? '—'),
    h('td', {}, run.agentId ?? '—'),
  );
  // Why a run is doubted, under it: a tooltip alone is lost on touch screens and to screen readers.
  if (run.verdict !== 'suspect' || !run.reasons?.length) return [row];
  return [row, h('tr', { class: 'suspect-reasons' }, h('td', { colspan: '7' }, run.reasons.join(' · ')))];
}

/** The page as it loaded: the median run's filmstrip and its final screenshot, when the result has them. */
function filmstrip(lhr) {
  const frames = lhr.audits?.['screenshot-thumbnails']?.details?.items ?? [];
  const final = lhr.audits?.['final-screenshot']?.details?.data;
  if (frames.length === 0 && !final) return null;
  return h(
    'div',
    { class: 'filmstrip-box' },
    h(
      'ol',
      { class: 'filmstrip', 'aria-label': 'How the page loaded' },
      frames.map((frame) =>
        h(
          'li',
          { 'data-timing': String(frame.timing) },
          h('img', { src: frame.data, alt: `The page at ${Math.round(frame.timing)} ms` }),
          h('span', {}, formatMs(frame.timing)),
        ),
      ),
    ),
    final ? h('img', { class: 'final-screenshot', src: final, alt: 'The page once loaded' }) : null,
  );
}

/** One line on how far the cell's numbers are to be trusted; nothing for snapshots from before verdicts. */
function verificationLine(cell) {
  const v = cell.verification;
  if (!v) return null;
  const text = `${v.reliableRuns} reliable, ${v.suspectRuns} suspect run${v.suspectRuns === 1 ? '' : 's'}${v.retests ? `, ${v.retests} re-test${v.retests === 1 ? '' : 's'}` : ''}`;
  return h(
    'p',
    { class: `verification${v.median === 'suspect' ? ' verification-suspect' : ''}` },
    v.median === 'suspect'
      ? `${text} · no run was reliable: the median is suspect`
      : `${text} · median over reliable runs`,
  );
}

async function snapshotView(params) {
  const url = params.get('url');
  const date = params.get('date');
  const result = await api('audit', { url, date });
  const cards = ['mobile', 'desktop'].flatMap((device) =>
    Object.entries(result[device] ?? {}).map(([location, cell]) => snapshotCard(url, date, device, location, cell)),
  );
  // Cells the update could not measure before its deadline: said, not silently left out.
  for (const { device, location, reason } of result.missing ?? [])
    cards.push(cellCard(device, location, 'missing', h('p', { class: 'missing-reason' }, `Not measured: ${reason}`)));
  show(`${url} at ${date}`, crumbs(url), h('h1', {}, `Snapshot ${date} UTC`), h('div', { class: 'cells' }, cards));
}

/** A cell of the snapshot: its median run's scores and metrics, checks, filmstrip and runs. */
function snapshotCard(url, date, device, location, cell) {
  const lhr = cell.lighthouse;
  return cellCard(
    device,
    location,
    '',
    h(
      'div',
      { class: 'gauges' },
      CATEGORIES.map(([id, label]) =>
        h(
          'div',
          { class: 'gauge', 'data-category': id },
          scoreBadge(categoryScore(lhr, id), label),
          h('span', {}, label),
        ),
      ),
    ),
    h(
      'dl',
      { class: 'metrics' },
      METRICS.flatMap(([id, label, format]) => [
        h('dt', {}, label),
        h('dd', { 'data-metric': id }, format(auditValue(lhr, id))),
      ]),
    ),
    h(
      'p',
      { class: 'meta' },
      `Lighthouse ${lhr.lighthouseVersion ?? '?'} · ${lhr.elementCount ?? '?'} elements · CrUX page: ${lhr.crux?.url ? 'data' : 'no data'}`,
    ),
    checksList(cell),
    filmstrip(lhr),
    runsTable(cell),
    verificationLine(cell),
    h(
      'p',
      {},
      h('a', { class: 'button', href: link('report', { url, date, device, location }) }, 'Full Lighthouse report'),
    ),
  );
}

// ---- the full Lighthouse report -----------------------------------------------------------

async function reportView(params) {
  const [url, date, device, location] = ['url', 'date', 'device', 'location'].map((name) => params.get(name));
  const [result, renderer] = await Promise.all([
    api('audit', { url, date, device, location: [location] }),
    import('/dashboard/vendor/lighthouse-report.js'),
  ]);
  const lhr = result[device]?.[location]?.lighthouse;
  if (!lhr) throw new Error(`No ${device}/${location} result in the snapshot of ${date}.`);
  const container = h('div', { class: 'lighthouse-report' });
  show(`Lighthouse report of ${url}`, crumbs(url, h('a', { href: link('snapshot', { url, date }) }, date)), container);
  // Stored results leave out Lighthouse's i18n table (the renderer falls back to English) and keep small WebP screenshots.
  container.append(
    renderer.renderReport(offline(lhr), { disableFireworks: true, disableDarkMode: true, omitTopbar: false }),
  );
  // "Open in Viewer" and "Save as Gist" would post the result (of a page behind a login, maybe)
  // to googlechrome.github.io and GitHub: a self-hosted report keeps it here.
  for (const action of container.querySelectorAll('[data-action="open-viewer"], [data-action="save-gist"]'))
    action.remove();
}

/** The result without what makes the renderer offer to open it on Google's treemap site (it sends the data along). */
function offline(lhr) {
  const treemap = lhr.audits['script-treemap-data'];
  if (!treemap) return lhr;
  // The audit stays (categories refer to it); its details are what the button would send.
  return { ...lhr, audits: { ...lhr.audits, 'script-treemap-data': { ...treemap, details: undefined } } };
}

// ---- routing ------------------------------------------------------------------------------

const ROUTES = {
  '': projectsView,
  project: projectView,
  snapshot: snapshotView,
  compare: compareView,
  report: reportView,
};

async function route() {
  signOutButton.hidden = !session.token();
  if (!session.token()) return signInView();
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  const render = ROUTES[path] ?? projectsView;
  view.setAttribute('aria-busy', 'true');
  try {
    await render(new URLSearchParams(query ?? ''));
  } catch (error) {
    failure(error);
  } finally {
    view.removeAttribute('aria-busy');
  }
}

signOutButton.addEventListener('click', () => {
  session.signOut();
  location.hash = '#/';
  route();
});
window.addEventListener('hashchange', route);
route();

import { formatMs, h } from './dom.js';
import { formatScore } from './lighthouse-result.js';
import { dataTable } from './page.js';
import { statusStrip, trendChart } from './trend-chart.js';

// A project's trends: a chart per KPI (lab lines per device/location, and per step for a flow,
// CrUX field lines beside them), the deploy markers, and CrUX's Core Web Vitals assessments.

/** Points `{ name, date, value, revision? }` as chart series: a line per name, in the points' order. */
function seriesOf(points, extra = {}) {
  const byName = new Map();
  for (const { name, ...point } of points) {
    if (!byName.has(name)) byName.set(name, []);
    byName.get(name).push(point);
  }
  return [...byName].map(([name, linePoints]) => ({ name, points: linePoints, ...extra }));
}

/** A lab line's name: its device/location, and a flow project's step (issue 36) after it. */
const labName = (r) => `${r.device}/${r.location}${r.step === undefined ? '' : ` · ${r.step}`}`;

/** A record of a page's load: a project's navigation, or a flow's navigation step (the one with an FCP). */
const isLoad = (r) => r.step === undefined || typeof r.data?.fcp === 'number';

/** A Lighthouse KPI's values (`pick` of its record's data) over time: a line per device/location (and step). */
function labSeries(records, kpi, pick) {
  return seriesOf(
    records
      .filter((r) => r.section === 'LIGHTHOUSE' && r.kpi === kpi)
      .map((r) => ({ name: labName(r), date: r.date, value: pick(r.data), revision: r.revision }))
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

/**
 * The trend charts in their order: `lab` names the Lighthouse record and its field, `field` the
 * CrUX metric plotted beside it. The lab Core Web Vitals (KPI version 2) carry web.dev's
 * good / needs improvement / poor bands.
 */
const TREND_CHARTS = [
  // A flow's timespans and snapshots have no load to weigh: Lighthouse counts their passed audits instead.
  {
    kpi: 'performance',
    title: 'Performance score',
    format: formatScore,
    max: 100,
    lab: ['performance', 'score'],
    loadsOnly: true,
  },
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
  // Lab INP is a flow's timespans' (a navigation has none): a line per timespan step beside the field p75.
  {
    kpi: 'inp',
    title: 'Interaction to Next Paint',
    lab: ['performance', 'inp'],
    field: 'inp',
    bands: { good: 200, poor: 500 },
  },
  { kpi: 'si', title: 'Speed Index', lab: ['performance', 'si'] },
  { kpi: 'tti', title: 'Time to Interactive', lab: ['performance', 'tti'] },
  {
    kpi: 'accessibility',
    title: 'Accessibility score',
    format: formatScore,
    max: 100,
    lab: ['accessibility', 'score'],
  },
  {
    kpi: 'best_practices',
    title: 'Best practices score',
    format: formatScore,
    max: 100,
    lab: ['best_practices', 'score'],
  },
  { kpi: 'seo', title: 'SEO score', format: formatScore, max: 100, lab: ['seo', 'score'] },
];

/** One chart per Lighthouse KPI, a line per device/location; CrUX assessments as a table. */
export function trends(url, records, annotations = []) {
  const mine = records.filter((r) => r.url === url);
  const charts = TREND_CHARTS.map(({ lab, field, loadsOnly, format = formatMs, ...chart }) =>
    trendChart({
      ...chart,
      format,
      series: [
        ...(lab ? labSeries(loadsOnly ? mine.filter(isLoad) : mine, lab[0], (data) => data[lab[1]]) : []),
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

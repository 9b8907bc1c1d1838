import { h, s } from './dom.js';
import { revisionText } from './revision.js';

// A small SVG line chart, written here rather than taken from a chart library: the canvas
// libraries (uPlot, Chart.js) draw pixels, and here every point must be an element with its
// value (a tooltip on hover, readable by screen readers, checked by the browser test).

const WIDTH = 560;
const HEIGHT = 220;
const MARGIN = { top: 12, right: 16, bottom: 28, left: 48 };
const COLORS = ['#1a73e8', '#e8710a', '#188038', '#9334e6', '#d01884', '#12b5cb', '#b06000', '#5f6368'];

export function niceMax(value) {
  if (value <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(value));
  return Math.ceil(value / step) * step;
}

/** `2026-11-22T10:00:00` → milliseconds, UTC. */
const time = (date) => Date.parse(`${date}Z`);

/** A chart's figure with its caption, and the series' points; an empty figure says so. */
function chartFigure(kpi, title, series, className = 'chart') {
  const figure = h('figure', { class: className, 'data-kpi': kpi });
  figure.append(h('figcaption', {}, title));
  const points = series.flatMap((line) => line.points);
  if (points.length === 0) figure.append(h('p', { class: 'empty' }, 'No data in this range.'));
  return { figure, points };
}

/** The time axis: from the first point to the last (a day around a single one), mapped onto [left, right]. */
function timeAxis(points, left, right) {
  const times = points.map((p) => time(p.date));
  let [t0, t1] = [Math.min(...times), Math.max(...times)];
  if (t0 === t1) [t0, t1] = [t0 - 43_200_000, t1 + 43_200_000];
  return {
    first: Math.min(...times),
    last: Math.max(...times),
    x: (date) => left + ((time(date) - t0) / (t1 - t0)) * (right - left),
  };
}

/**
 * @param {{ kpi: string, title: string, format: (v: number) => string, max?: number,
 *           series: Array<{ name: string, points: Array<{ date: string, value: number }> }>,
 *           annotations?: Array<{ date: string, text: string }>,
 *           bands?: { good: number, poor: number } }} chart  bands: Core Web Vitals' thresholds, drawn behind the lines
 */
export function trendChart({ kpi, title, format, max, series, annotations = [], bands }) {
  const { figure, points } = chartFigure(kpi, title, series);
  if (points.length === 0) return figure;
  // The axis spans the markers too: a deploy after the last snapshot still shows.
  const { first, last, x } = timeAxis([...points, ...annotations], MARGIN.left, WIDTH - MARGIN.right);
  // With bands, the axis reaches past the poor threshold so all three show.
  const yMax = max ?? niceMax(Math.max(...points.map((p) => p.value), bands ? bands.poor * 1.2 : 0));
  const innerH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const y = (value) => MARGIN.top + innerH - (Math.min(value, yMax) / yMax) * innerH;

  const svg = s('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': title });
  if (bands) svg.append(...bandRects(bands, yMax, y, format));
  for (const fraction of [0, 0.5, 1]) {
    const value = yMax * fraction;
    svg.append(s('line', { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(value), y2: y(value), class: 'grid' }));
    svg.append(s('text', { x: MARGIN.left - 6, y: y(value) + 4, 'text-anchor': 'end', class: 'tick' }, format(value)));
  }
  svg.append(...timeLabels(first, last, MARGIN.left, HEIGHT));
  svg.append(...annotations.map((marker) => annotationLine(marker, x(marker.date))));
  const legend = h('ul', { class: 'legend' });
  series.forEach((line, index) => {
    const color = COLORS[index % COLORS.length];
    svg.append(...seriesMarks(line, color, x, y, format));
    legend.append(h('li', {}, h('span', { class: 'swatch', style: `background:${color}` }), line.name));
  });
  figure.append(svg, legend);
  return figure;
}

/** Core Web Vitals' good / needs improvement / poor bands behind the lines. */
function bandRects(bands, yMax, y, format) {
  const band = (from, to, name) =>
    s(
      'rect',
      {
        x: MARGIN.left,
        width: WIDTH - MARGIN.left - MARGIN.right,
        y: y(to),
        height: Math.max(0, y(from) - y(to)),
        class: `band band-${name}`,
        'data-band': name,
      },
      s('title', {}, `${name.replace('-', ' ')}: ${format(from)}–${format(to)}`),
    );
  return [
    band(0, bands.good, 'good'),
    band(bands.good, bands.poor, 'needs-improvement'),
    band(bands.poor, yMax, 'poor'),
  ];
}

/** The first and the last time under the axis. */
function timeLabels(first, last, left, height) {
  const dayLabel = (t) => new Date(t).toISOString().slice(5, 16).replace('T', ' ');
  return [
    s('text', { x: left, y: height - 8, class: 'tick' }, dayLabel(first)),
    s('text', { x: WIDTH - MARGIN.right, y: height - 8, 'text-anchor': 'end', class: 'tick' }, dayLabel(last)),
  ];
}

/** A deploy marker: a dashed vertical line, its text on hover, under the data. */
function annotationLine(marker, at) {
  return s(
    'line',
    {
      x1: at,
      x2: at,
      y1: MARGIN.top,
      y2: HEIGHT - MARGIN.bottom,
      class: 'annotation',
      'data-date': marker.date,
      'data-text': marker.text,
    },
    s('title', {}, `${marker.date} UTC · ${marker.text}`),
  );
}

/** A series' line, and a point for each value carrying it (hover, screen readers, tests). */
function seriesMarks(line, color, x, y, format) {
  const sorted = [...line.points].sort((a, b) => time(a.date) - time(b.date));
  const polyline = s('polyline', {
    points: sorted.map((p) => `${x(p.date)},${y(p.value)}`).join(' '),
    stroke: color,
    class: line.field ? 'line field' : 'line',
  });
  const circles = sorted.map((point) =>
    s(
      'circle',
      {
        cx: x(point.date),
        cy: y(point.value),
        r: 3.5,
        fill: color,
        'data-series': line.name,
        'data-date': point.date,
        'data-value': point.value,
        ...revisionAttributes(point.revision),
      },
      s('title', {}, `${line.name} · ${point.date} UTC · ${format(point.value)}${revisionTitle(point.revision)}`),
    ),
  );
  return [polyline, ...circles];
}

/** A point's revision as attributes (tests, scripts); a pull request's point is marked apart. */
const revisionAttributes = (revision) => ({
  class: revision?.pullRequest === undefined ? undefined : 'point-pr',
  'data-commit': revision?.commit,
  'data-branch': revision?.branch,
  'data-pull-request': revision?.pullRequest,
});

/** The revision in a point's tooltip, the commit in full; a pull request's point says it is from one. */
function revisionTitle(revision) {
  if (!revision) return '';
  const text = revisionText(revision, (commit) => commit);
  return `\n${text}${revision.pullRequest === undefined ? '' : ' · from pull request'}`;
}

const STATUS_COLORS = { PASSED: '#0c7d3c', FAILED: '#c5221f', NO_DATA: '#9aa0a6' };

/**
 * Categorical values over time (CrUX's PASSED / FAILED / NO_DATA): a row per series, a mark
 * per point at its time, coloured by value, each an element carrying its value.
 * @param {{ kpi: string, title: string, series: Array<{ name: string, points: Array<{ date: string, value: string }> }> }} chart
 */
export function statusStrip({ kpi, title, series }) {
  const { figure, points } = chartFigure(kpi, title, series, 'chart strip');
  if (points.length === 0) return figure;
  const rowHeight = 22;
  const left = 110;
  const height = MARGIN.top + series.length * rowHeight + MARGIN.bottom;
  const { first, last, x } = timeAxis(points, left, WIDTH - MARGIN.right);
  const svg = s('svg', { viewBox: `0 0 ${WIDTH} ${height}`, role: 'img', 'aria-label': title });
  series.forEach((line, index) => {
    const y = MARGIN.top + index * rowHeight + rowHeight / 2;
    svg.append(s('text', { x: left - 8, y: y + 4, 'text-anchor': 'end', class: 'tick' }, line.name));
    svg.append(s('line', { x1: left, x2: WIDTH - MARGIN.right, y1: y, y2: y, class: 'grid' }));
    for (const point of line.points) {
      svg.append(
        s(
          'rect',
          {
            x: x(point.date) - 4,
            y: y - 7,
            width: 8,
            height: 14,
            rx: 2,
            fill: STATUS_COLORS[point.value] ?? STATUS_COLORS.NO_DATA,
            'data-series': line.name,
            'data-date': point.date,
            'data-value': point.value,
          },
          s('title', {}, `${line.name} · ${point.date} UTC · ${point.value}`),
        ),
      );
    }
  });
  svg.append(...timeLabels(first, last, left, height));
  figure.append(
    svg,
    h(
      'ul',
      { class: 'legend' },
      Object.entries(STATUS_COLORS).map(([value, color]) =>
        h('li', {}, h('span', { class: 'swatch', style: `background:${color}` }), value),
      ),
    ),
  );
  return figure;
}

import { formatBytes, formatMs, h, s } from './dom.js';
import { endOf, startOf } from './request-lines.js';
import { niceMax } from './trend-chart.js';
import { NO_ENTITY, waterfallGroups } from './waterfall-rows.js';

// The median run's requests as a waterfall, in SVG like the trend plots: each request an
// element (`g.request`, its bar `rect.bar`) carrying its values, for a tooltip, screen readers
// and the browser test. Built detached and put in place once, and nothing is measured while
// drawing, so 5,000 requests cost one layout.

const WIDTH = 560;
const LABEL = 170;
const RIGHT = 28;
const ROW = 16;
const HEAD = 20;
const TYPES = ['Document', 'Script', 'Stylesheet', 'Image', 'Font', 'Fetch', 'XHR', 'Media'];

const typeClass = (type) => `type-${TYPES.includes(type) ? type.toLowerCase() : 'other'}`;
const groupName = (group) =>
  group.entity === NO_ENTITY ? 'No entity' : `${group.entity}${group.firstParty ? ' (first party)' : ''}`;

/** A URL short enough for a row's label: its path's last part and query, else its host. */
function shortUrl(url) {
  try {
    const parsed = new URL(url);
    const last = parsed.pathname.split('/').filter(Boolean).at(-1) ?? '';
    const text = `${last}${parsed.search}` || parsed.host;
    return text.length > 30 ? `${text.slice(0, 29)}…` : text;
  } catch {
    return url.slice(0, 30);
  }
}

/** A request's tooltip: everything the bar stands for. */
function requestTitle(r) {
  const parts = [
    r.entity ?? 'no entity',
    r.resourceType ?? '?',
    r.statusCode ?? '?',
    `${formatBytes(r.transferSize)} transferred (${formatBytes(r.resourceSize)} resource)`,
    `${Math.round(startOf(r))}–${Math.round(endOf(r))} ms`,
    r.priority ? `priority ${r.priority}` : null,
    r.isLinkPreload ? 'preloaded' : null,
    r.lcp ? "the LCP element's request" : null,
  ];
  return `${r.url}\n${parts.filter((p) => p !== null).join(' · ')}`;
}

/** One request's row: its label, the wait before it reached the network, its bar, LCP's mark. */
function requestRow(r, y, x) {
  const [start, end] = [startOf(r), endOf(r)];
  const queued = r.rendererStartTime !== undefined && r.rendererStartTime < start;
  return s(
    'g',
    {
      class: r.lcp ? 'request lcp' : 'request',
      'data-url': r.url,
      'data-start': start,
      'data-end': end,
      'data-bytes': r.transferSize ?? '',
      'data-entity': r.entity ?? NO_ENTITY,
      'data-type': r.resourceType ?? '',
      'data-status': r.statusCode ?? '',
      'data-lcp': r.lcp ? 'true' : undefined,
    },
    s('title', {}, requestTitle(r)),
    s('text', { x: LABEL - 6, y: y + ROW - 4, 'text-anchor': 'end', class: 'label' }, shortUrl(r.url)),
    queued
      ? s('line', { x1: x(r.rendererStartTime), x2: x(start), y1: y + ROW / 2, y2: y + ROW / 2, class: 'queued' })
      : null,
    s('rect', {
      x: x(start),
      y: y + 2,
      width: Math.max(1, x(end) - x(start)),
      height: ROW - 4,
      class: `bar ${typeClass(r.resourceType)}${r.lcp ? ' lcp' : ''}`,
    }),
    r.lcp ? s('text', { x: x(end) + 3, y: y + ROW - 4, class: 'lcp-label' }, 'LCP') : null,
  );
}

/** A group's heading row, and its requests' rows under it; a cut group says how many it hides. */
function groupRows(group, top, x) {
  const rows = [];
  let y = top;
  rows.push(
    s(
      'text',
      { x: 4, y: y + HEAD - 5, class: 'entity-name', 'data-entity': group.entity },
      `${groupName(group)} · ${group.requests.length} request${group.requests.length === 1 ? '' : 's'} · ${formatBytes(group.bytes)}`,
    ),
  );
  y += HEAD;
  for (const request of group.shown) {
    rows.push(requestRow(request, y, x));
    y += ROW;
  }
  if (group.hidden > 0) {
    rows.push(
      s('text', { x: LABEL - 6, y: y + ROW - 4, 'text-anchor': 'end', class: 'more' }, `… ${group.hidden} more`),
    );
    y += ROW;
  }
  const g = s(
    'g',
    { class: `entity-group${group.firstParty ? ' first-party' : ''}`, 'data-entity': group.entity },
    rows,
  );
  return { g, height: y - top };
}

/** Where on the axis a time (ms) falls, and the ticks: 0 to a round time past the last request's end. */
function timeScale(requests) {
  const last = niceMax(requests.reduce((latest, r) => Math.max(latest, endOf(r)), 0));
  const x = (t) => LABEL + (Math.min(t, last) / last) * (WIDTH - LABEL - RIGHT);
  return { x, ticks: [0, 0.25, 0.5, 0.75, 1].map((f) => f * last) };
}

/** The time axis, apart from the rows so it stays in sight while they scroll. */
function axis(ticks, x) {
  return s(
    'svg',
    { viewBox: `0 0 ${WIDTH} 18`, class: 'waterfall-axis', 'aria-hidden': 'true' },
    ticks.map((t, i) =>
      s(
        'text',
        { x: x(t), y: 13, 'text-anchor': i === 0 ? 'start' : i === ticks.length - 1 ? 'end' : 'middle', class: 'tick' },
        formatMs(t),
      ),
    ),
  );
}

/** The rows' SVG: grid lines at the ticks behind every group. */
function rowsSvg(groups, ticks, x, title) {
  const parts = [];
  let height = 0;
  for (const group of groups) {
    const drawn = groupRows(group, height, x);
    parts.push(drawn.g);
    height += drawn.height;
  }
  const grid = ticks.map((t) => s('line', { x1: x(t), x2: x(t), y1: 0, y2: height, class: 'grid' }));
  return s(
    'svg',
    { viewBox: `0 0 ${WIDTH} ${height}`, role: 'img', 'aria-label': title, class: 'waterfall' },
    grid,
    parts,
  );
}

function legend() {
  return h(
    'ul',
    { class: 'legend waterfall-legend' },
    [...TYPES, 'Other'].map((type) => h('li', {}, h('span', { class: `swatch ${typeClass(type)}` }), type)),
    h('li', {}, h('span', { class: 'swatch lcp' }), "LCP element's request"),
  );
}

/** What the artifact's end line says of its completeness; nothing when it holds every request. */
function completeness(requests, end) {
  if (!end)
    return h(
      'p',
      { class: 'artifact-note', 'data-note': 'incomplete' },
      'The artifact ends early: some requests may be missing.',
    );
  if (!end.truncated) return null;
  return h(
    'p',
    { class: 'artifact-note', 'data-note': 'truncated' },
    `Cut at its size bound: ${requests.length} of the run's ${end.requests} requests were kept.`,
  );
}

/**
 * The waterfall of `requests` (request-lines.js), grouped by entity (`firstParties` first), with
 * the artifact's end line. Collapsed when large; "Show all" draws every request.
 */
export function waterfall({ requests, end, firstParties }, expanded = false) {
  const title = "The median run's requests";
  const lcp = requests.find((r) => r.lcp);
  const figure = h(
    'figure',
    { class: 'chart waterfall-figure', 'data-requests': requests.length },
    h('figcaption', {}, title),
    h(
      'p',
      { class: 'meta' },
      `${requests.length} requests · ${formatBytes(requests.reduce((sum, r) => sum + (r.transferSize ?? 0), 0))} transferred`,
      lcp
        ? [' · LCP element from ', h('code', { class: 'lcp-url' }, lcp.url)]
        : ' · no request marked as the LCP element’s',
    ),
    completeness(requests, end),
  );
  if (requests.length === 0) return figure;
  const groups = waterfallGroups(requests, firstParties, expanded);
  const { x, ticks } = timeScale(requests);
  const hidden = groups.reduce((sum, g) => sum + g.hidden, 0);
  figure.append(axis(ticks, x), h('div', { class: 'waterfall-box' }, rowsSvg(groups, ticks, x, title)), legend());
  figure.dataset.shown = String(requests.length - hidden);
  if (hidden > 0) {
    const button = h('button', { type: 'button', class: 'secondary show-all' }, `Show all ${requests.length} requests`);
    button.addEventListener('click', () => figure.replaceWith(waterfall({ requests, end, firstParties }, true)));
    figure.append(button);
  }
  return figure;
}

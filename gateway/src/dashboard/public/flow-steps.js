import { formatMs, h } from './dom.js';
import { filmstrip } from './filmstrip.js';
import { CATEGORIES, formatCls } from './lighthouse-result.js';
import { scoreBadge } from './page.js';

// A flow cell's steps (issue 36), in the flow's order: each step's kind and name, what its
// screenshots show, and its median run's numbers as its kind has them (a navigation's load
// metrics, a timespan's INP, TBT and CLS, a snapshot's category scores); and the link to
// Lighthouse's own flow report of them (flow-report.html).

/** The numbers each kind of step has: [field of the run's summary, label, format]. */
const STEP_METRICS = {
  navigate: [
    ['lcp', 'LCP', formatMs],
    ['fcp', 'FCP', formatMs],
    ['tbt', 'TBT', formatMs],
    ['cls', 'CLS', formatCls],
  ],
  timespan: [
    ['inp', 'INP', formatMs],
    ['tbt', 'TBT', formatMs],
    ['cls', 'CLS', formatCls],
  ],
  snapshot: [],
};

/**
 * A step's scores: a navigation's performance, a snapshot's other categories. Lighthouse shows a
 * timespan's and a snapshot's as counts of passed audits: a snapshot's performance has no metric
 * to weigh (it scores 0), and a timespan's categories are partial.
 */
function stepScores(kind, run) {
  const shown = kind === 'navigate' ? CATEGORIES.slice(0, 1) : kind === 'snapshot' ? CATEGORIES.slice(1) : [];
  return shown.map(([id, label]) =>
    h('div', { class: 'gauge', 'data-category': id }, scoreBadge(run.scores[id] ?? null, label), h('span', {}, label)),
  );
}

function stepItem(step, index) {
  const run = step.runs[step.median - 1] ?? step.runs[0];
  const metrics = STEP_METRICS[step.kind] ?? [];
  const scores = run ? stepScores(step.kind, run) : [];
  return h(
    'li',
    { class: 'flow-step', 'data-step': step.name, 'data-kind': step.kind },
    h(
      'h4',
      {},
      h('span', { class: 'step-index' }, `${index + 1}.`),
      ' ',
      h('span', { class: `step-kind step-kind-${step.kind}` }, step.kind),
      ' ',
      h('span', { class: 'step-name' }, step.name),
    ),
    scores.length > 0 ? h('div', { class: 'gauges' }, scores) : null,
    run && metrics.length > 0
      ? h(
          'dl',
          { class: 'metrics' },
          metrics.flatMap(([field, label, format]) => [
            h('dt', {}, label),
            h('dd', { 'data-metric': field }, format(run[field])),
          ]),
        )
      : null,
    step.lighthouse ? filmstrip(step.lighthouse, `What "${step.name}" showed`) : null,
  );
}

/** Where Lighthouse's flow report of a cell is drawn: a page of its own, its steps chosen in its fragment. */
const flowReportHref = (params) => `/dashboard/flow-report.html?${new URLSearchParams(params)}`;

/** The steps of a flow's cell, and the link to its flow report; nothing for a navigation's cell. */
export function flowSteps(url, date, device, location, steps) {
  if (!steps?.length) return null;
  return h(
    'section',
    { class: 'flow-steps' },
    h('h3', {}, `User flow · ${steps.length} step${steps.length === 1 ? '' : 's'}`),
    h('ol', { class: 'flow-step-list' }, steps.map(stepItem)),
    h(
      'p',
      {},
      h(
        'a',
        { class: 'button flow-report-link', href: flowReportHref({ url, date, device, location }) },
        'Lighthouse flow report',
      ),
    ),
  );
}

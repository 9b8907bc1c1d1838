import { api } from './api.js';
import { cellArtifacts } from './cell-artifacts.js';
import { filmstrip } from './filmstrip.js';
import { flowSteps } from './flow-steps.js';
import { formatMs, h } from './dom.js';
import { auditValue, categoryScore, CATEGORIES, METRICS } from './lighthouse-result.js';
import { cellCard, crumbs, dataTable, link, scoreBadge, show } from './page.js';
import { revisionLine, revisionOfResult } from './revision.js';

// One snapshot of a project: per device and location its median run's scores and metrics, its
// budget checks, filmstrip and runs, a link to the full Lighthouse report, and its artifacts
// (cell-artifacts.js: request waterfall, third parties, trace).

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

export async function snapshotView(params) {
  const url = params.get('url');
  const date = params.get('date');
  const result = await api('audit', { url, date });
  const cards = ['mobile', 'desktop'].flatMap((device) =>
    Object.entries(result[device] ?? {}).map(([location, cell]) => snapshotCard(url, date, device, location, cell)),
  );
  // Cells the update could not measure before its deadline: said, not silently left out.
  for (const { device, location, reason } of result.missing ?? [])
    cards.push(cellCard(device, location, 'missing', h('p', { class: 'missing-reason' }, `Not measured: ${reason}`)));
  show(
    `${url} at ${date}`,
    crumbs(url),
    h('h1', {}, `Snapshot ${date} UTC`),
    revisionLine(revisionOfResult(result)),
    h('div', { class: 'cells' }, cards),
  );
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
    // A flow's first step is the cell's own navigation: its filmstrip is shown with the steps.
    cell.steps ? null : filmstrip(lhr),
    flowSteps(url, date, device, location, cell.steps),
    runsTable(cell),
    verificationLine(cell),
    h(
      'p',
      {},
      h('a', { class: 'button', href: link('report', { url, date, device, location }) }, 'Full Lighthouse report'),
    ),
    cellArtifacts(url, date, device, location, cell.artifacts),
  );
}

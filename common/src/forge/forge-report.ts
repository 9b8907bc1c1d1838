import { DEVICES, LOCATIONS, type Device, type Location } from '../ids.ts';
import type { AuditResult, LocationResult } from '../audit-result.ts';
import type { BudgetReport } from '../budgets.ts';
import type { CompareCell, CompareResult } from '../compare-result.ts';
import type { Revision } from '../revision.ts';
import { MAX_STATUS_DESCRIPTION, type CommitStatus, type StatusState } from './forge-client.ts';

/** What a report on a change is made of: the head snapshot, its budgets, and its comparison with a base. */
export interface ChangeReport {
  /** The URL measured (the head side). */
  url: string;
  /**
   * The page it is held against (the base side), which names the comment: a preview's URL may
   * change with every push (a host per commit), the page it previews does not.
   */
  baseUrl: string;
  /** The head snapshot's date, as the API writes it. */
  date: string;
  result: AuditResult;
  budgets: BudgetReport;
  /** The base URL and the comparison with its snapshot, or why there is none. */
  comparison: { baseUrl: string; compared: CompareResult } | { unavailable: string };
  revision?: Revision;
  /** The dashboard's compare view for a cell (or the whole snapshot). */
  link: (cell?: { device: Device; location: Location }) => string;
}

/** Finds perfwatch's own comment again: one per base page, hidden in the rendered comment. */
export function reportMarker(baseUrl: string): string {
  return `<!-- perfwatch-report ${encodeURIComponent(baseUrl)} -->`;
}

const METRIC_LABEL: Record<CompareCell['metrics'][number]['metric'], string> = {
  performance: 'Performance',
  fcp: 'FCP',
  lcp: 'LCP',
  si: 'Speed Index',
  tti: 'TTI',
  tbt: 'TBT',
  cls: 'CLS',
};

/** A metric's value as people read it: scores whole, timings in ms or s, CLS to three places. */
function metricText(metric: CompareCell['metrics'][number]['metric'], value: number | null, signed = false): string {
  if (value === null) return '–';
  const sign = signed && value > 0 ? '+' : signed && value < 0 ? '−' : '';
  const v = signed ? Math.abs(value) : value;
  if (metric === 'performance') return `${sign}${Math.round(v)}`;
  if (metric === 'cls') return `${sign}${v.toFixed(3)}`;
  return v >= 1000 ? `${sign}${(v / 1000).toFixed(2)} s` : `${sign}${Math.round(v)} ms`;
}

interface Cell {
  device: Device;
  location: Location;
  result: LocationResult;
  compared?: CompareCell;
  failed: string[];
}

function cellsOf(report: ChangeReport): Cell[] {
  const compared = 'compared' in report.comparison ? report.comparison.compared.cells : [];
  const cells: Cell[] = [];
  for (const device of DEVICES)
    for (const location of LOCATIONS) {
      const result = report.result[device]?.[location];
      if (!result) continue;
      const checks = report.budgets.cells.find((c) => c.device === device && c.location === location)?.checks ?? [];
      cells.push({
        device,
        location,
        result,
        compared: compared.find((c) => c.device === device && c.location === location),
        failed: checks.filter((c) => !c.pass).map((c) => c.message),
      });
    }
  return cells;
}

const medianOf = (cell: Cell) => cell.result.runs[cell.result.median - 1];

/** "perf 71 (−21) · LCP 3.21 s (+1.10 s) · TBT 450 ms · CLS 0.020 · 1 budget failed", within GitHub's 140. */
function statusDescription(cell: Cell): string {
  const median = medianOf(cell);
  const part = (metric: 'performance' | 'lcp' | 'tbt' | 'cls', label: string) => {
    const change = cell.compared?.metrics.find((m) => m.metric === metric)?.difference ?? null;
    const value = metricText(metric, median?.[metric] ?? null);
    return `${label} ${value}${change !== null && change !== 0 ? ` (${metricText(metric, change, true)})` : ''}`;
  };
  const budgets =
    cell.failed.length > 0
      ? `${cell.failed.length} budget${cell.failed.length === 1 ? '' : 's'} failed`
      : 'budgets passed';
  const text = [part('performance', 'perf'), part('lcp', 'LCP'), part('tbt', 'TBT'), part('cls', 'CLS'), budgets].join(
    ' · ',
  );
  return text.length <= MAX_STATUS_DESCRIPTION ? text : `${text.slice(0, MAX_STATUS_DESCRIPTION - 1)}…`;
}

/** One commit status per measured cell (state from its budgets), and one per cell without a result. */
export function commitStatuses(report: ChangeReport): CommitStatus[] {
  const statuses: CommitStatus[] = cellsOf(report).map((cell) => ({
    context: `perfwatch/${cell.device}/${cell.location}`,
    state: (cell.failed.length > 0 ? 'failure' : 'success') satisfies StatusState,
    description: statusDescription(cell),
    targetUrl: report.link({ device: cell.device, location: cell.location }),
  }));
  for (const missing of report.result.missing ?? [])
    statuses.push({
      context: `perfwatch/${missing.device}/${missing.location}`,
      state: 'error',
      description: `not measured: ${missing.reason}`.slice(0, MAX_STATUS_DESCRIPTION),
      targetUrl: report.link(),
    });
  return statuses;
}

/** A markdown table cell's text: no pipes or line breaks from a page's title or a reason. */
const md = (text: string) => text.replace(/[|\r\n]+/g, ' ').replace(/[<>]/g, (c) => (c === '<' ? '&lt;' : '&gt;'));

function revisionText(revision: Revision | undefined): string {
  if (!revision) return '';
  const parts = [
    revision.commit ? `commit \`${revision.commit.slice(0, 12)}\`` : '',
    revision.branch ? `branch \`${md(revision.branch)}\`` : '',
    revision.pullRequest ? `#${revision.pullRequest}` : '',
  ].filter(Boolean);
  return parts.length > 0 ? ` · ${parts.join(' · ')}` : '';
}

function pValueText(metric: CompareCell['metrics'][number]): string {
  const s = metric.significance;
  if (s.test !== 'mann-whitney-u') return `n/a (${s.runs.from} vs ${s.runs.to} runs)`;
  const p = s.p < 0.001 ? '< 0.001' : s.p.toFixed(3);
  return s.beyondNoise ? `**${p}**` : p;
}

function cellRows(cell: Cell): string[] {
  const name = `${cell.device} · ${cell.location}`;
  if (!cell.compared) {
    const median = medianOf(cell);
    return (['performance', 'lcp', 'tbt', 'cls'] as const).map(
      (metric) => `| ${name} | ${METRIC_LABEL[metric]} | – | ${metricText(metric, median?.[metric] ?? null)} | – | – |`,
    );
  }
  return cell.compared.metrics.map(
    (m) =>
      `| ${name} | ${METRIC_LABEL[m.metric]} | ${metricText(m.metric, m.from)} | ${metricText(m.metric, m.to)} | ${metricText(m.metric, m.difference, true)} | ${pValueText(m)} |`,
  );
}

function runsLine(cell: Cell): string {
  const v = cell.result.verification;
  const suspect = v?.suspectRuns ?? 0;
  const reliable = v?.reliableRuns ?? cell.result.runs.length;
  const retests = v && v.retests > 0 ? `, ${v.retests} re-test${v.retests === 1 ? '' : 's'}` : '';
  return `${cell.device} · ${cell.location}: ${reliable} reliable, ${suspect} suspect${retests}`;
}

/** The pull request comment: base against head per cell, the budgets, the runs' trust, a link. */
export function reportComment(report: ChangeReport): string {
  const cells = cellsOf(report);
  const pass = report.budgets.pass && (report.result.missing ?? []).length === 0;
  const lines = [
    reportMarker(report.baseUrl),
    `### perfwatch: ${md(report.url)} — ${pass ? 'budgets passed ✅' : 'budgets failed ❌'}`,
    '',
    `Head: ${report.date} UTC${revisionText(report.revision)}  `,
    'compared' in report.comparison
      ? `Base: ${md(report.comparison.baseUrl)} at ${report.comparison.compared.from} UTC (the median of reliable runs; p from a Mann–Whitney U test, **bold** beyond run-to-run noise)`
      : `Base: none to compare with (${md(report.comparison.unavailable)})`,
    '',
    '| Cell | Metric | Base | Head | Change | p |',
    '|---|---|---:|---:|---:|---:|',
    ...cells.flatMap(cellRows),
    '',
    '**Budgets**',
    ...cells.map((cell) =>
      cell.failed.length > 0
        ? `- ❌ ${cell.device} · ${cell.location}: ${cell.failed.map(md).join('; ')}`
        : `- ✅ ${cell.device} · ${cell.location}`,
    ),
    ...(report.result.missing ?? []).map((m) => `- ⚠️ ${m.device} · ${m.location}: not measured (${md(m.reason)})`),
    '',
    `**Runs** — ${cells.map(runsLine).join('; ')}`,
    '',
    `[Open the comparison in perfwatch](${report.link()})`,
  ];
  return lines.join('\n');
}

import Table from 'cli-table3';
import {
  type AuditResult,
  type CompareResult,
  DEVICES,
  LOCATIONS,
  type OverviewRecord,
  budgetKeyText,
  formatValue,
  measure,
  type BudgetKey,
  type BudgetReport,
} from '@perfwatch/common';

// Tables go to terminals and CI logs alike: no colours, and no rule between rows.
const plain = { style: { head: [], border: [] }, chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' } };

const RESULT_COLUMNS: BudgetKey[] = [
  'performance',
  'accessibility',
  'best-practices',
  'seo',
  'lcp',
  'fcp',
  'tbt',
  'cls',
];

/** Which run is the median, and how far the runs are trusted: "2 of 4, 2 suspect, 2 re-tests". */
function medianRunText(cell: NonNullable<NonNullable<AuditResult['mobile']>['london']>): string {
  const v = cell.verification;
  const trust =
    v && v.suspectRuns > 0
      ? `, ${v.suspectRuns} suspect${v.retests > 0 ? `, ${v.retests} re-test${v.retests === 1 ? '' : 's'}` : ''}${v.median === 'suspect' ? ' (median suspect)' : ''}`
      : '';
  return `${cell.median} of ${cell.runs.length}${trust}`;
}

/** Runs the gateway doubted, one line each with its reasons, under the table. */
function suspectRunLines(result: AuditResult): string[] {
  const lines: string[] = [];
  for (const device of DEVICES) {
    for (const location of LOCATIONS) {
      const cell = result[device]?.[location];
      cell?.runs.forEach((run, index) => {
        if (run.verdict === 'suspect')
          lines.push(
            `${device}/${location} run ${index + 1}${run.retestOf ? ` (re-test of ${run.retestOf})` : ''} suspect: ${(run.reasons ?? []).join('; ')}`,
          );
      });
    }
  }
  return lines;
}

/** The project's budget checks the gateway stored, one line each, under the table. */
function checkLines(result: AuditResult): string[] {
  const lines: string[] = [];
  for (const device of DEVICES) {
    for (const location of LOCATIONS) {
      for (const check of result[device]?.[location]?.checks ?? []) {
        const confirmation =
          check.confirmation === undefined
            ? ''
            : check.confirmation === null
              ? ' (confirmation run failed)'
              : ` (confirmation run: ${formatValue(check.key, check.confirmation.actual)}, ${check.confirmation.pass ? 'passed' : 'failed'})`;
        const event = check.event ? ` → ${check.event}` : '';
        lines.push(
          `${device}/${location} ${check.pass ? 'pass' : 'FAIL'} ${check.kind} ${budgetKeyText(check)}: ${check.message}${confirmation}; ${check.state}${event}`,
        );
      }
    }
  }
  return lines.length > 0 ? ["budget checks (the project's, on the server):", ...lines.map((line) => `  ${line}`)] : [];
}

/** One row per device and location: the date, the four scores and the key metrics of the median run. */
export function auditResultTable(result: AuditResult): string {
  const table = new Table({
    ...plain,
    head: [
      'device',
      'location',
      'date (UTC)',
      'perf',
      'a11y',
      'best pr.',
      'seo',
      'LCP',
      'FCP',
      'TBT',
      'CLS',
      'median run',
    ],
  });
  for (const device of DEVICES) {
    for (const location of LOCATIONS) {
      const cell = result[device]?.[location];
      if (!cell) continue;
      table.push([
        device,
        location,
        cell.lighthouse.date,
        ...RESULT_COLUMNS.map((key) => formatValue(key, measure(cell.lighthouse, key))),
        medianRunText(cell),
      ]);
    }
  }
  for (const { device, location, reason } of result.missing ?? [])
    table.push([device, location, { colSpan: RESULT_COLUMNS.length + 2, content: `not measured: ${reason}` }]);
  return [table.toString(), ...flowStepsTable(result), ...suspectRunLines(result), ...checkLines(result)].join('\n');
}

/** A flow's steps, a row each under the cells' table: what each step measured in its median run. */
function flowStepsTable(result: AuditResult): string[] {
  const table = new Table({
    ...plain,
    head: ['device', 'location', 'step', 'kind', 'INP', 'TBT', 'CLS', 'LCP', 'scores', 'median run'],
  });
  for (const device of DEVICES) {
    for (const location of LOCATIONS) {
      for (const step of result[device]?.[location]?.steps ?? []) {
        const run = step.runs[step.median - 1];
        const ms = (value: number | null | undefined) => (value == null ? '–' : `${Math.round(value)} ms`);
        const scores = Object.entries(run?.scores ?? {})
          .filter(([, score]) => score !== null)
          .map(([id, score]) => `${id} ${score}`)
          .join(', ');
        table.push([
          device,
          location,
          step.name,
          step.kind,
          ms(run?.inp),
          ms(run?.tbt),
          run?.cls == null ? '–' : run.cls.toFixed(3),
          ms(run?.lcp),
          scores || '–',
          `${step.median} of ${step.runs.length}`,
        ]);
      }
    }
  }
  return table.length > 0 ? ['flow steps (median run of each):', table.toString()] : [];
}

function shortData(data: OverviewRecord['data']): string {
  if (typeof data === 'string') return data;
  const text = JSON.stringify(data);
  return text.length > 72 ? `${text.slice(0, 71)}…` : text;
}

export function overviewTable(records: readonly OverviewRecord[]): string {
  const table = new Table({
    ...plain,
    head: ['date (UTC)', 'url', 'device', 'location', 'type', 'section', 'kpi', 'data'],
  });
  for (const r of records)
    table.push([
      r.date,
      r.url,
      r.device,
      r.location,
      r.updateType,
      r.section,
      r.step === undefined ? r.kpi : `${r.kpi} (${r.step})`,
      shortData(r.data),
    ]);
  return table.toString();
}

export function budgetTable(report: BudgetReport): string {
  const table = new Table({ ...plain, head: ['device', 'location', 'check', 'result', ''] });
  for (const cell of report.cells) {
    if (cell.checks.length === 0) table.push([cell.device, cell.location, '—', 'no budgets', 'pass']);
    for (const check of cell.checks)
      table.push([
        cell.device,
        cell.location,
        `${check.kind} ${budgetKeyText(check)}`,
        check.message,
        check.pass ? 'pass' : 'FAIL',
      ]);
  }
  return table.toString();
}

const metricText = (metric: string, value: number | null, signed = false) => {
  if (value === null) return '—';
  const sign = signed && value > 0 ? '+' : '';
  if (metric === 'performance') return `${sign}${Math.round(value)}`;
  if (metric === 'cls') return `${sign}${value.toFixed(3)}`;
  return `${sign}${Math.round(value)} ms`;
};

/** Per device and location: each metric on both sides, the difference, and whether it is beyond noise. */
export function compareTable(result: CompareResult): string {
  const parts = [`${result.url}: ${result.from} → ${result.to}`];
  for (const cell of result.cells) {
    const table = new Table({
      ...plain,
      head: [`${cell.device}/${cell.location}`, result.from, result.to, 'difference', 'beyond noise?'],
    });
    for (const m of cell.metrics) {
      const s = m.significance;
      const verdict =
        s.test === 'not enough runs'
          ? `not enough runs (${s.runs.from} and ${s.runs.to}; 3 a side)`
          : `${s.beyondNoise ? 'YES' : 'no'} (p = ${s.p.toFixed(3)}, ${s.runs.from} and ${s.runs.to} runs)`;
      table.push([
        m.metric,
        metricText(m.metric, m.from),
        metricText(m.metric, m.to),
        metricText(m.metric, m.difference, true),
        verdict,
      ]);
    }
    parts.push(table.toString());
    for (const a of cell.audits.slice(0, 5))
      parts.push(`  audit ${a.id}: ${a.from ?? '—'} → ${a.to ?? '—'} (${a.difference > 0 ? '+' : ''}${a.difference})`);
    for (const o of cell.opportunities.slice(0, 5))
      parts.push(`  opportunity ${o.id}: ${o.fromMs} ms → ${o.toMs} ms to save`);
  }
  for (const u of result.unmatched)
    parts.push(`${u.device}/${u.location}: only in the ${u.onlyIn === 'from' ? 'first' : 'second'} snapshot`);
  return parts.join('\n');
}

import {
  COMPARED_METRICS,
  formatApiDateTime,
  loadTimeSavingMs,
  MIN_RUNS_FOR_TEST,
  mannWhitneyU,
  SIGNIFICANCE_LEVEL,
  type CompareCell,
  type CompareResult,
  type LighthouseResult,
  type RunSummary,
} from '@perfwatch/common';
import type { LocationSnapshot, SnapshotRecord } from './store/store.ts';

/** Audits and opportunities listed per cell, the largest changes first. */
const MOST_CHANGED = 10;

/**
 * The runs a side's values are tested with: the reliable ones (those the median was taken
 * from); all of them for snapshots stored before runs had verdicts.
 */
function testedRuns(runs: readonly RunSummary[]): RunSummary[] {
  return runs.filter((run) => run.verdict !== 'suspect');
}

function metricChanges(from: LocationSnapshot, to: LocationSnapshot): CompareCell['metrics'] {
  const medianFrom = from.runs[from.median - 1];
  const medianTo = to.runs[to.median - 1];
  const runsFrom = testedRuns(from.runs);
  const runsTo = testedRuns(to.runs);
  return COMPARED_METRICS.map((metric) => {
    const a = medianFrom?.[metric] ?? null;
    const b = medianTo?.[metric] ?? null;
    const xs = runsFrom.map((r) => r[metric]).filter((v): v is number => v !== null);
    const ys = runsTo.map((r) => r[metric]).filter((v): v is number => v !== null);
    const runs = { from: xs.length, to: ys.length };
    const significance =
      xs.length >= MIN_RUNS_FOR_TEST && ys.length >= MIN_RUNS_FOR_TEST
        ? (() => {
            const { p } = mannWhitneyU(xs, ys);
            return { test: 'mann-whitney-u' as const, p, beyondNoise: p < SIGNIFICANCE_LEVEL, runs };
          })()
        : { test: 'not enough runs' as const, runs };
    return { metric, from: a, to: b, difference: a !== null && b !== null ? b - a : null, significance };
  });
}

const title = (lhr: LighthouseResult, id: string): string => {
  const t = lhr.audits[id]?.['title'];
  return typeof t === 'string' ? t : id;
};

/** Scored audits whose score moved, by how far (×100). */
function auditChanges(from: LighthouseResult, to: LighthouseResult): CompareCell['audits'] {
  const score = (lhr: LighthouseResult, id: string) => {
    const s = lhr.audits[id]?.score;
    return typeof s === 'number' ? Math.round(s * 100) : null;
  };
  const ids = new Set([...Object.keys(from.audits), ...Object.keys(to.audits)]);
  return [...ids]
    .map((id) => ({ id, title: title(to.audits[id] ? to : from, id), from: score(from, id), to: score(to, id) }))
    .filter((c) => (c.from !== null || c.to !== null) && c.from !== c.to)
    .map((c) => ({ ...c, difference: (c.to ?? 0) - (c.from ?? 0) }))
    .sort((a, b) => Math.abs(b.difference) - Math.abs(a.difference) || a.id.localeCompare(b.id))
    .slice(0, MOST_CHANGED);
}

/** Failing audits' estimated load-time saving (as the SAVINGS KPI record counts it), and how it moved. */
function opportunityChanges(from: LighthouseResult, to: LighthouseResult): CompareCell['opportunities'] {
  const saving = (lhr: LighthouseResult, id: string) => Math.round(loadTimeSavingMs(lhr.audits[id]));
  const ids = new Set([...Object.keys(from.audits), ...Object.keys(to.audits)]);
  return [...ids]
    .map((id) => ({ id, title: title(to.audits[id] ? to : from, id), fromMs: saving(from, id), toMs: saving(to, id) }))
    .filter((c) => c.fromMs !== c.toMs)
    .map((c) => ({ ...c, differenceMs: c.toMs - c.fromMs }))
    .sort((a, b) => Math.abs(b.differenceMs) - Math.abs(a.differenceMs) || a.id.localeCompare(b.id))
    .slice(0, MOST_CHANGED);
}

/** A snapshot as compare reads it: its date and its cells' results. */
type ComparedSnapshot = Pick<SnapshotRecord, 'date'> & { results: readonly LocationSnapshot[] };

/** Two snapshots of one project side by side, cell by cell (`/v1/compare`). */
export function compareSnapshots(url: string, from: ComparedSnapshot, to: ComparedSnapshot): CompareResult {
  const key = (r: Pick<LocationSnapshot, 'device' | 'location'>) => `${r.device}/${r.location}`;
  const toByCell = new Map(to.results.map((r) => [key(r), r]));
  const fromCells = new Set(from.results.map(key));
  const cells: CompareCell[] = [];
  const unmatched: CompareResult['unmatched'] = [];
  for (const a of from.results) {
    const b = toByCell.get(key(a));
    if (!b) {
      unmatched.push({ device: a.device, location: a.location, onlyIn: 'from' });
      continue;
    }
    cells.push({
      device: a.device,
      location: a.location,
      metrics: metricChanges(a, b),
      audits: auditChanges(a.lighthouse, b.lighthouse),
      opportunities: opportunityChanges(a.lighthouse, b.lighthouse),
    });
  }
  for (const b of to.results)
    if (!fromCells.has(key(b))) unmatched.push({ device: b.device, location: b.location, onlyIn: 'to' });
  return { url, from: formatApiDateTime(from.date), to: formatApiDateTime(to.date), cells, unmatched };
}

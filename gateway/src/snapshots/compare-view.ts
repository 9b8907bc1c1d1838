import { setImmediate } from 'node:timers/promises';
import {
  COMPARED_METRICS,
  formatApiDateTime,
  MIN_RUNS_FOR_TEST,
  mannWhitneyU,
  SIGNIFICANCE_LEVEL,
  type CompareCell,
  type CompareResult,
  type Revision,
  type RunSummary,
} from '@perfwatch/common';
import { auditsOfJson, type AuditSummary } from './result-audits.ts';
import { releaseResult } from './result-bytes.ts';
import type { LocationSnapshot, SnapshotRecord } from '../store/store.ts';

/** A result's audits by id, as compare reads them (result-audits.ts). */
type ResultAudits = ReadonlyMap<string, AuditSummary>;

/** Audits and opportunities listed per cell, the largest changes first. */
const MOST_CHANGED = 10;

/**
 * The runs a side's values are tested with: the reliable ones (those the median was taken
 * from); all of them for snapshots stored before runs had verdicts.
 */
function testedRuns(runs: readonly RunSummary[]): RunSummary[] {
  return runs.filter((run) => run.verdict !== 'suspect');
}

function metricChanges(from: ComparedCell, to: ComparedCell): CompareCell['metrics'] {
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

/** Scored audits whose score moved, by how far (×100). */
function auditChanges(from: ResultAudits, to: ResultAudits): CompareCell['audits'] {
  const score = (audits: ResultAudits, id: string) => {
    const s = audits.get(id)?.score;
    return typeof s === 'number' ? Math.round(s * 100) : null;
  };
  return [...auditIds(from, to)]
    .map((id) => ({ id, title: titleOf(from, to, id), from: score(from, id), to: score(to, id) }))
    .filter((c) => (c.from !== null || c.to !== null) && c.from !== c.to)
    .map((c) => ({ ...c, difference: (c.to ?? 0) - (c.from ?? 0) }))
    .sort((a, b) => Math.abs(b.difference) - Math.abs(a.difference) || a.id.localeCompare(b.id))
    .slice(0, MOST_CHANGED);
}

/** Failing audits' estimated load-time saving (as the SAVINGS KPI record counts it), and how it moved. */
function opportunityChanges(from: ResultAudits, to: ResultAudits): CompareCell['opportunities'] {
  const saving = (audits: ResultAudits, id: string) => Math.round(audits.get(id)?.savingMs ?? 0);
  return [...auditIds(from, to)]
    .map((id) => ({ id, title: titleOf(from, to, id), fromMs: saving(from, id), toMs: saving(to, id) }))
    .filter((c) => c.fromMs !== c.toMs)
    .map((c) => ({ ...c, differenceMs: c.toMs - c.fromMs }))
    .sort((a, b) => Math.abs(b.differenceMs) - Math.abs(a.differenceMs) || a.id.localeCompare(b.id))
    .slice(0, MOST_CHANGED);
}

const auditIds = (from: ResultAudits, to: ResultAudits) => new Set([...from.keys(), ...to.keys()]);
const titleOf = (from: ResultAudits, to: ResultAudits, id: string) => (to.get(id) ?? from.get(id))?.title ?? id;

/** A cell as compare reads it: its runs beside its result, which `auditsOf` reads. */
type ComparedCell = Pick<LocationSnapshot, 'device' | 'location' | 'median' | 'runs'>;
/** A snapshot as compare reads it: its date, the code change it measured if it was given one, its cells. */
type ComparedSnapshot<C extends ComparedCell> = Pick<SnapshotRecord, 'date'> & {
  revision?: Revision;
  results: readonly C[];
};

/** The projects compared: `url`'s snapshot is the head side (`to`), `baseUrl`'s (when another) the base. */
interface ComparedProjects {
  url: string;
  baseUrl?: string;
}

/**
 * Two snapshots side by side, cell by cell (`/v1/compare`), of one project or of two. Each cell's
 * audits are read (`auditsOf`) one result at a time, a cell's two sides one after the other, and
 * let go before the next: however many cells, a comparison holds one result and two cells' summaries.
 */
export async function compareSnapshots<C extends ComparedCell>(
  { url, baseUrl }: ComparedProjects,
  from: ComparedSnapshot<C>,
  to: ComparedSnapshot<C>,
  auditsOf: (cell: C) => Promise<ResultAudits> | ResultAudits,
): Promise<CompareResult> {
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
    // A turn of the event loop before each result: one of 16 MiB takes 0.1–0.2 s to read, a
    // comparison of 24 seconds, and other requests (whose headers have 10 s to be read) must
    // not wait for all of it. An embedded store's reads never leave the thread by themselves.
    await setImmediate();
    const before = await auditsOf(a);
    await setImmediate();
    const after = await auditsOf(b);
    cells.push({
      device: a.device,
      location: a.location,
      metrics: metricChanges(a, b),
      audits: auditChanges(before, after),
      opportunities: opportunityChanges(before, after),
    });
  }
  for (const b of to.results)
    if (!fromCells.has(key(b))) unmatched.push({ device: b.device, location: b.location, onlyIn: 'to' });
  return {
    url,
    // Members present only when set: a comparison of one project without revisions keeps the seed's shape.
    ...(baseUrl === undefined || baseUrl === url ? {} : { baseUrl }),
    from: formatApiDateTime(from.date),
    to: formatApiDateTime(to.date),
    ...(from.revision ? { fromRevision: from.revision } : {}),
    ...(to.revision ? { toRevision: to.revision } : {}),
    cells,
    unmatched,
  };
}

/**
 * A stored cell's audits, as compareSnapshots reads them: its result's bytes fetched, summarised
 * and let go at once (the summary holds copies of what it read: the bytes are no one's now).
 */
export async function storedCellAudits(cell: { resultJson(): Promise<Buffer> }): Promise<ResultAudits> {
  const json = await cell.resultJson();
  try {
    return auditsOfJson(json);
  } finally {
    releaseResult(json);
  }
}

import { setImmediate } from 'node:timers/promises';
import {
  COMPARED_METRICS,
  formatApiDateTime,
  MIN_RUNS_FOR_TEST,
  mannWhitneyU,
  SIGNIFICANCE_LEVEL,
  type CompareCell,
  type CompareResult,
  type RequestsComparison,
  type Revision,
  type RunSummary,
  type ThirdPartySummary,
} from '@perfwatch/common';
import { auditsOfJson, type AuditSummary } from './result-audits.ts';
import { thirdPartiesOfJson } from '../artifacts/result-third-parties.ts';
import { thirdPartyChanges } from '../artifacts/requests-diff.ts';
import { releaseResult } from './result-bytes.ts';
import type { LocationSnapshot, SnapshotRecord } from '../store/store.ts';

/** A result's audits by id, as compare reads them (result-audits.ts). */
type ResultAudits = ReadonlyMap<string, AuditSummary>;
/** What compare reads of one result: its audits and, when read from a stored result, its third parties. */
interface CellReading {
  audits: ResultAudits;
  thirdParties?: ThirdPartySummary[];
}
const readingOf = (read: ResultAudits | CellReading): CellReading =>
  (read instanceof Map ? { audits: read } : read) as CellReading;

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

/** One compared cell from its two sides, what was read of their results, and their requests compared. */
function comparedCell(
  [a, b]: [ComparedCell, ComparedCell],
  [before, after]: [CellReading, CellReading],
  requests: RequestsComparison | undefined,
): CompareCell {
  return {
    device: a.device,
    location: a.location,
    metrics: metricChanges(a, b),
    audits: auditChanges(before.audits, after.audits),
    opportunities: opportunityChanges(before.audits, after.audits),
    ...(requests ? { requests } : {}),
    ...(before.thirdParties && after.thirdParties
      ? { thirdParties: thirdPartyChanges(before.thirdParties, after.thirdParties) }
      : {}),
  };
}

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
 * audits (and third parties, when `auditsOf` reads them) are read one result at a time, a cell's
 * two sides one after the other, and let go before the next: however many cells, a comparison
 * holds one result and two cells' summaries. `requestsOf`, when given, compares a cell's two
 * requests artifacts (compared-requests.ts), after its results are let go.
 */
export async function compareSnapshots<C extends ComparedCell>(
  { url, baseUrl }: ComparedProjects,
  from: ComparedSnapshot<C>,
  to: ComparedSnapshot<C>,
  auditsOf: (cell: C) => Promise<ResultAudits | CellReading> | ResultAudits | CellReading,
  { requestsOf }: { requestsOf?: (from: C, to: C) => Promise<RequestsComparison> } = {},
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
    const before = readingOf(await auditsOf(a));
    await setImmediate();
    const after = readingOf(await auditsOf(b));
    cells.push(comparedCell([a, b], [before, after], await requestsOf?.(a, b)));
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

/** A stored cell's audits and third parties (result-third-parties.ts), from one read of its result. */
export async function storedCellReading(cell: { resultJson(): Promise<Buffer> }): Promise<CellReading> {
  const json = await cell.resultJson();
  try {
    return { audits: auditsOfJson(json), thirdParties: thirdPartiesOfJson(json) };
  } finally {
    releaseResult(json);
  }
}

import {
  formatApiDateTime,
  median,
  type AuditResult,
  type CellStep,
  type Device,
  type Location,
  type LocationResult,
  type Revision,
} from '@perfwatch/common';
import { randomUUID } from 'node:crypto';
import { reportedArtifacts, type ArtifactClock } from '../artifacts/artifact-states.ts';
import { openObject } from '../http/json-object-text.ts';
import type { ProjectRecord, SnapshotFilter, SnapshotRecord } from '../store/store.ts';
import { revisionMember } from '../store/stored-revision.ts';

function verification(
  runs: SnapshotRecord['results'][number]['runs'],
  median: number,
): Pick<LocationResult, 'verification'> {
  if (!runs.some((run) => run.verdict)) return {};
  const suspectRuns = runs.filter((run) => run.verdict === 'suspect').length;
  const host = hostCondition(runs);
  return {
    verification: {
      reliableRuns: runs.length - suspectRuns,
      suspectRuns,
      retests: runs.filter((run) => run.retestOf !== undefined).length,
      median: runs[median - 1]?.verdict ?? 'reliable',
      ...(host ? { host } : {}),
    },
  };
}

/**
 * When every run was doubted for its agent's host alone: what the host showed, said once for
 * the cell (the median of the runs' readings), rather than by re-testing into it.
 */
function hostCondition(runs: SnapshotRecord['results'][number]['runs']): string | undefined {
  if (runs.length === 0 || !runs.every((run) => run.hostOnly)) return undefined;
  const agents = [...new Set(runs.map((run) => run.agentId ?? 'unknown'))].join(', ');
  const said: string[] = [];
  const drifts = runs.flatMap((r) =>
    r.benchmarkIndex != null && r.baselineBenchmarkIndex ? [r.benchmarkIndex / r.baselineBenchmarkIndex - 1] : [],
  );
  const drift = drifts.length > 0 ? median(drifts) : 0;
  if (Math.abs(drift) >= 0.005)
    said.push(
      `read the machine ${Math.round(Math.abs(drift) * 100)} % ${drift < 0 ? 'slower' : 'faster'} than its baseline`,
    );
  const shares = runs.flatMap((r) => (r.otherCpuShare != null ? [r.otherCpuShare] : []));
  if (shares.length > 0) said.push(`gave ${Math.round(median(shares) * 100)} % of its CPU to other processes`);
  return `on every run, agent ${agents} ${said.join(' and ')} (median of the runs); not measured again on the same host`;
}

/** What the audit result adds to a cell's Lighthouse result. */
type LighthouseAdditions = Pick<LocationResult['lighthouse'], 'crux' | 'date' | 'elementCount'>;

/** What the audit result shows of a cell besides its Lighthouse result. */
type CellView = {
  device: Device;
  location: Location;
  crux: LighthouseAdditions['crux'];
  elementCount: number | null;
  median: number;
  runs: SnapshotRecord['results'][number]['runs'];
  checks?: SnapshotRecord['results'][number]['checks'];
  artifacts?: SnapshotRecord['results'][number]['artifacts'];
  /** A flow's steps (their results are written as the cell's is, by `jsonOf` with the step's place). */
  steps?: readonly CellStep[];
};

/**
 * A cell's result JSON, or with `step` a flow step's (0-based; the first step's is the cell's):
 * what the audit result splices in where each belongs.
 */
export type ResultJsonOf<R> = (cell: R, step?: number) => Uint8Array | Promise<Uint8Array>;

/** What an audit result is made of: a snapshot's date, its cells and the cells it lacks. */
interface SnapshotCells<R> {
  date: Date;
  available: SnapshotRecord['available'];
  results: readonly R[];
  missing?: SnapshotRecord['missing'];
  /** The code change measured: shown in every cell, absent when there was none. */
  revision?: Revision;
}

/**
 * The audit result as JSON in pieces, to be written as they come: each cell's Lighthouse
 * result is written as its JSON in UTF-8 (`jsonOf`: of an update just made, the bytes its gzip
 * inflates to; of a stored snapshot, the bytes the store read it from), never decoded or
 * serialised again, and only one is inflated at a time, however many cells. The bytes must be
 * one JSON object in UTF-8 (a new cell's were checked when the snapshot was built; a stored
 * one was parsed by the store). The result's own keys come first, the audit result's additions
 * after them, so they win.
 */
export async function* auditResultPieces<R extends CellView>(
  snapshot: SnapshotCells<R>,
  project: Pick<ProjectRecord, 'defaultLocation'>,
  jsonOf: ResultJsonOf<R>,
  filter: SnapshotFilter = {},
  clock?: ArtifactClock,
): AsyncGenerator<string | Uint8Array> {
  const nonce = randomUUID();
  const placeholders: Array<{ token: string; cell: R; additions: Partial<LighthouseAdditions>; step?: number }> = [];
  const lighthouse: ResultPlace<R> = (cell, additions, step) => {
    const token = `@@perfwatch-result:${nonce}:${placeholders.length}@@`;
    placeholders.push({ token, cell, additions, ...(step !== undefined ? { step } : {}) });
    return token;
  };
  const view = auditResultOf(snapshot, project, filter, lighthouse, clock);
  // The view's text with each token's place taken by its cell's result, in the text's order.
  const json = JSON.stringify(view);
  const placed = placeholders
    .map((placeholder) => {
      const quoted = JSON.stringify(placeholder.token);
      return { ...placeholder, quoted, found: json.indexOf(quoted) };
    })
    .sort((a, b) => a.found - b.found);
  let at = 0;
  for (const { quoted, found, cell, additions, step } of placed) {
    yield json.slice(at, found);
    yield* cellPieces(jsonOf, cell, additions, step);
    at = found + quoted.length;
  }
  yield json.slice(at);
}

/**
 * A cell's result continued with the audit result's additions. A generator of its own, whose
 * frame ends with the cell: held in the caller's, the result's bytes stayed reachable while the
 * next cell's were read, and an answer held two results at once instead of one.
 */
async function* cellPieces<R>(
  jsonOf: ResultJsonOf<R>,
  cell: R,
  additions: Partial<LighthouseAdditions>,
  step: number | undefined,
): AsyncGenerator<string | Uint8Array> {
  const { body, empty } = openObject(await (step === undefined ? jsonOf(cell) : jsonOf(cell, step)));
  yield body;
  yield Object.keys(additions).length === 0 ? '}' : `${empty ? '' : ','}${JSON.stringify(additions).slice(1)}`;
}

/** Where a result goes in the view: a token its JSON takes the place of (with the additions after its own keys). */
type ResultPlace<R> = (cell: R, additions: Partial<LighthouseAdditions>, step?: number) => unknown;

function auditResultOf<R extends CellView>(
  snapshot: SnapshotCells<R>,
  project: Pick<ProjectRecord, 'defaultLocation'>,
  filter: SnapshotFilter,
  lighthouse: ResultPlace<R>,
  clock?: ArtifactClock,
): AuditResult {
  const date = formatApiDateTime(snapshot.date);
  const out: Partial<Record<Device, Partial<Record<Location, LocationResult>>>> = {};
  for (const r of snapshot.results) {
    const locations = snapshot.available.filter((a) => a.device === r.device).map((a) => a.location);
    (out[r.device] ??= {})[r.location] = {
      lighthouse: lighthouse(r, { crux: r.crux, date, elementCount: r.elementCount }) as LocationResult['lighthouse'],
      median: r.median,
      locations,
      defaultLocation: project.defaultLocation,
      runs: r.runs,
      ...verification(r.runs, r.median),
      ...(r.checks ? { checks: r.checks } : {}),
      // Each kept, missing or expired; absent from cells measured before artifacts were kept.
      ...(r.artifacts && clock ? { artifacts: reportedArtifacts(r.artifacts, snapshot.date, clock) } : {}),
      ...revisionMember(snapshot.revision),
      // A flow's steps in order, each with its median run's result for the step.
      ...(r.steps
        ? {
            steps: r.steps.map(({ name, kind, median, runs }, index) => ({
              name,
              kind,
              median,
              runs,
              lighthouse: lighthouse(r, {}, index) as Record<string, unknown>,
            })),
          }
        : {}),
    };
  }
  // Only the cells the request asked about; absent when none is missing, so a complete result
  // keeps the seed's shape exactly.
  const missing = (snapshot.missing ?? []).filter(
    (m) =>
      (!filter.device || m.device === filter.device) &&
      (!filter.locations?.length || filter.locations.includes(m.location)),
  );
  return missing.length > 0 ? { ...out, missing } : out;
}

/**
 * A snapshot's audit result without its Lighthouse results (each cell's `lighthouse` holds only
 * the audit result's additions): its medians, runs, verification, checks and missing cells, what
 * a report on the snapshot reads, without reading a result from the store.
 */
export function auditSummaryOf<R extends CellView>(
  snapshot: SnapshotCells<R>,
  project: Pick<ProjectRecord, 'defaultLocation'>,
): AuditResult {
  return auditResultOf(snapshot, project, {}, (_cell, additions) => additions);
}

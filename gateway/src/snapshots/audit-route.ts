import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, formatApiDateTime } from '@perfwatch/common';
import { auditResultPieces } from './audit-view.ts';
import { whileConnected, type HeavyReads } from './heavy-reads.ts';
import { parseRequest } from '../http/parse-request.ts';
import { releaseResult } from './result-bytes.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SnapshotReadsStore, StoredCell } from './store/snapshots-store.ts';
import { callerProject } from '../accounts/caller-project.ts';
import { GATHER_SIZE, writeJsonPieces } from '../http/written.ts';
import type { ArtifactClock } from '../artifacts/artifact-states.ts';

/**
 * `GET|POST /v1/audit`: the snapshot of a project at one second, optionally filtered. Its cells
 * are found first; the answer is written in one of the gateway's places for heavy reads
 * (heavy-reads.ts), each result read from the store as it is written (the JSON text it is
 * stored as, checked, never serialised again), one at a time.
 */
export function auditRoute({
  store,
  reads,
  stallMs,
  clock,
}: {
  store: Pick<ProjectsStore, 'findProject'> & Pick<SnapshotReadsStore, 'findSnapshotCells'>;
  reads: HeavyReads;
  stallMs: number;
  /** What cells' artifacts are reported against (ARTIFACT_RETENTION_DAYS); absent: not reported. */
  clock?: ArtifactClock | undefined;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.audit);
    const project = await callerProject(store, req, params.url);
    const filter = { device: params.device, locations: params.location };
    const snapshot = await store.findSnapshotCells(project.id, params.date, filter);
    if (!snapshot)
      throw new ApiError('NOT_FOUND', 'No snapshot at that date.', [
        `date: the project has no snapshot at ${formatApiDateTime(params.date)}`,
      ]);
    // Each large result is handed back once the client has it: writeJsonPieces writes a piece of
    // GATHER_SIZE or more, and waits until the socket has taken it, before it asks for the next;
    // so when a cell's result is asked for, the one before it is the client's. The last one is
    // the client's once the whole answer has left ('finish'); one cut short is left to the collector.
    let previous: Buffer | undefined;
    const jsonOf = async (cell: StoredCell, step?: number) => {
      if (previous && previous.byteLength >= GATHER_SIZE) releaseResult(previous);
      previous = await (step === undefined ? cell.resultJson() : cell.stepJson(step));
      return previous;
    };
    const written = await reads.run(
      () => writeJsonPieces(res, auditResultPieces(snapshot, project, jsonOf, filter, clock), stallMs),
      whileConnected(res),
    );
    const last = previous;
    if (written.end !== 'written' || !last) return;
    if (res.writableFinished) releaseResult(last);
    else res.once('finish', () => releaseResult(last));
  };
}

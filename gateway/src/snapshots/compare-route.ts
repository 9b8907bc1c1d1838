import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, formatApiDateTime } from '@perfwatch/common';
import { compareSnapshots } from './compare-view.ts';
import { whileConnected, type HeavyReads } from './heavy-reads.ts';
import { parseRequest } from '../http/parse-request.ts';
import { auditsOfJson } from './result-audits.ts';
import { releaseResult } from './result-bytes.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SnapshotReadsStore } from './store/snapshots-store.ts';
import { callerProject } from '../accounts/caller-project.ts';

/**
 * `GET|POST /v1/compare`: two snapshots of a project side by side (compare-view.ts). Their cells
 * are found first; their results are read in one of the gateway's places for heavy reads
 * (heavy-reads.ts), one at a time, each reduced to its audits' summaries as its bytes are read.
 */
export function compareRoute({
  store,
  reads,
}: {
  store: Pick<ProjectsStore, 'findProject'> & Pick<SnapshotReadsStore, 'findSnapshotCells'>;
  reads: HeavyReads;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.compare);
    const project = await callerProject(store, req, params.url);
    const filter = { device: params.device, locations: params.location };
    const [from, to] = await Promise.all([
      store.findSnapshotCells(project.id, params.from, filter),
      store.findSnapshotCells(project.id, params.to, filter),
    ]);
    const absent = [
      [from, 'from', params.from],
      [to, 'to', params.to],
    ] as const;
    const errors = absent
      .filter(([snapshot]) => !snapshot)
      .map(([, name, date]) => `${name}: the project has no snapshot at ${formatApiDateTime(date)}`);
    if (errors.length > 0) throw new ApiError('NOT_FOUND', 'No snapshot at that date.', errors);
    const compared = await reads.run(
      () =>
        compareSnapshots(project.url, from!, to!, async (cell) => {
          const json = await cell.resultJson();
          try {
            return auditsOfJson(json);
          } finally {
            // The summary holds copies of what it read: the bytes are no one's now.
            releaseResult(json);
          }
        }),
      whileConnected(res),
    );
    res.json(compared);
  };
}

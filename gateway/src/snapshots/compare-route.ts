import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError } from '@perfwatch/common';
import { compareSnapshots, storedCellReading } from './compare-view.ts';
import { compareRequests, type ComparedArtifacts } from '../artifacts/compared-requests.ts';
import { findSides } from './compare-sides.ts';
import { whileConnected, type HeavyReads } from './heavy-reads.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SnapshotReadsStore, StoredCell } from './store/snapshots-store.ts';
import { callerProject } from '../accounts/caller-project.ts';

/**
 * `GET|POST /v1/compare`: two snapshots side by side (compare-view.ts), of one project or of two
 * of the caller's (`baseUrl`'s then `url`'s), each named by its date or `latest`
 * (compare-sides.ts). Their cells are found first; their results are read in one of the
 * gateway's places for heavy reads (heavy-reads.ts), one at a time, each reduced to its audits'
 * summaries and third parties as its bytes are read; then each cell's two requests artifacts,
 * when the gateway keeps artifacts (compared-requests.ts).
 */
export function compareRoute({
  store,
  reads,
  artifacts,
}: {
  store: Pick<ProjectsStore, 'findProject'> & Pick<SnapshotReadsStore, 'findSnapshotCells' | 'listSnapshots'>;
  reads: HeavyReads;
  /** Absent: this gateway keeps no artifacts, and cells say nothing of requests. */
  artifacts?: ComparedArtifacts | undefined;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.compare);
    const head = await callerProject(store, req, params.url);
    // Another user's project as the base is as absent as one nobody has.
    const base =
      params.baseUrl === undefined || params.baseUrl === head.url
        ? head
        : await callerProject(store, req, params.baseUrl, 'baseUrl');
    const filter = { device: params.device, locations: params.location };
    const sides = await findSides(store, { head, base, from: params.from, to: params.to, filter });
    if (!sides.found) throw new ApiError('NOT_FOUND', sides.message, sides.errors);
    const requestsOf =
      artifacts &&
      ((a: StoredCell, b: StoredCell) =>
        compareRequests(
          artifacts,
          { project: base, snapshot: sides.from, cell: a },
          { project: head, snapshot: sides.to, cell: b },
        ));
    const compared = await reads.run(
      () =>
        compareSnapshots({ url: head.url, baseUrl: base.url }, sides.from, sides.to, storedCellReading, {
          ...(requestsOf ? { requestsOf } : {}),
        }),
      whileConnected(res),
    );
    res.json(compared);
  };
}

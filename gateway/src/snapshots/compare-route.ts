import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError } from '@perfwatch/common';
import { compareSnapshots, storedCellAudits } from './compare-view.ts';
import { findSides } from './compare-sides.ts';
import { whileConnected, type HeavyReads } from './heavy-reads.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SnapshotReadsStore } from './store/snapshots-store.ts';
import { callerProject } from '../accounts/caller-project.ts';

/**
 * `GET|POST /v1/compare`: two snapshots side by side (compare-view.ts), of one project or of two
 * of the caller's (`baseUrl`'s then `url`'s), each named by its date or `latest`
 * (compare-sides.ts). Their cells are found first; their results are read in one of the
 * gateway's places for heavy reads (heavy-reads.ts), one at a time, each reduced to its audits'
 * summaries as its bytes are read.
 */
export function compareRoute({
  store,
  reads,
}: {
  store: Pick<ProjectsStore, 'findProject'> & Pick<SnapshotReadsStore, 'findSnapshotCells' | 'listSnapshots'>;
  reads: HeavyReads;
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
    const compared = await reads.run(
      () => compareSnapshots({ url: head.url, baseUrl: base.url }, sides.from, sides.to, storedCellAudits),
      whileConnected(res),
    );
    res.json(compared);
  };
}

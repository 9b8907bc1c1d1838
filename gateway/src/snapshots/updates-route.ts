import type { Request, Response } from 'express';
import { API_ENDPOINTS, formatApiDateTime, MAX_UPDATES_PAGE, type SnapshotList } from '@perfwatch/common';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SnapshotReadsStore } from './store/snapshots-store.ts';
import { callerProject } from '../accounts/caller-project.ts';
import { revisionMember } from '../store/stored-revision.ts';

/**
 * `GET|POST /v1/updates?url=`: per device, the snapshot dates `/v1/audit` takes, ascending, a
 * page at a time: the newest `limit` (1000 at most) before `before`, and `next` to ask for the
 * page before when there is one. A project measured every 15 minutes has 35 000 snapshots a year.
 */
export function updatesRoute({
  store,
}: {
  store: Pick<ProjectsStore, 'findProject'> & Pick<SnapshotReadsStore, 'listSnapshots'>;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const { url, limit = MAX_UPDATES_PAGE, before } = parseRequest(req, API_ENDPOINTS.updates);
    const project = await callerProject(store, req, url);
    const list: SnapshotList = { url: project.url };
    // One more than the page: whether older snapshots remain.
    const found = await store.listSnapshots(project.id, { limit: limit + 1, ...(before ? { before } : {}) });
    const page = found.length > limit ? found.slice(1) : found;
    for (const snapshot of page) {
      for (const device of ['mobile', 'desktop'] as const) {
        const locations = snapshot.available.filter((a) => a.device === device).map((a) => a.location);
        if (locations.length > 0)
          (list[device] ??= []).push({
            date: formatApiDateTime(snapshot.date),
            updateType: snapshot.updateType,
            locations,
            ...revisionMember(snapshot.revision),
          });
      }
    }
    if (found.length > limit) list.next = formatApiDateTime(page[0]!.date);
    res.json(list);
  };
}

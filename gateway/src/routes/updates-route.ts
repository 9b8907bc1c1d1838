import type { Request, Response } from 'express';
import { formatApiDateTime, type SnapshotList } from '@perfwatch/common';
import { parseRequest, updatesBodySchema, updatesQuerySchema } from '../request-params.ts';
import type { Store } from '../store/store.ts';
import { callerProject } from './caller-project.ts';

/** `GET|POST /v1/updates?url=`: per device, the snapshot dates `/v1/audit` takes, ascending. */
export function updatesRoute({ store }: { store: Store }) {
  return async (req: Request, res: Response): Promise<void> => {
    const { url } = parseRequest(req, { query: updatesQuerySchema, body: updatesBodySchema });
    const project = await callerProject(store, req, url);
    const list: SnapshotList = { url: project.url };
    for (const snapshot of await store.listSnapshots(project.id)) {
      for (const device of ['mobile', 'desktop'] as const) {
        const locations = snapshot.available.filter((a) => a.device === device).map((a) => a.location);
        if (locations.length > 0) (list[device] ??= []).push({ date: formatApiDateTime(snapshot.date), updateType: snapshot.updateType, locations });
      }
    }
    res.json(list);
  };
}

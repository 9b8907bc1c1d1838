import type { Request, Response } from 'express';
import { ApiError, formatApiDateTime } from '@perfwatch/common';
import { auditResultPieces } from '../audit-view.ts';
import { auditBodySchema, auditQuerySchema, parseRequest } from '../request-params.ts';
import type { Store } from '../store/store.ts';
import { callerProject } from './caller-project.ts';
import { writeJsonPieces } from './written.ts';

/**
 * `GET|POST /v1/audit`: the snapshot of a project at one second, optionally filtered. Each
 * result is written as the JSON text the store read it from (and checked), not serialised again.
 */
export function auditRoute({ store, stallMs = 30_000 }: { store: Store; stallMs?: number }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, { query: auditQuerySchema, body: auditBodySchema });
    const project = await callerProject(store, req, params.url);
    const filter = { device: params.device, locations: params.location };
    const snapshot = await store.findSnapshot(project.id, params.date, filter);
    if (!snapshot)
      throw new ApiError('NOT_FOUND', 'No snapshot at that date.', [
        `date: the project has no snapshot at ${formatApiDateTime(params.date)}`,
      ]);
    await writeJsonPieces(
      res,
      auditResultPieces(snapshot, project, (cell) => cell.lighthouseJson, filter),
      stallMs,
    );
  };
}

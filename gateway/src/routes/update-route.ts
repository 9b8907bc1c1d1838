import type { Request, Response } from 'express';
import { DEVICES } from '@perfwatch/common';
import { toAuditResult } from '../audit-view.ts';
import { parseRequest, updateBodySchema, updateQuerySchema } from '../request-params.ts';
import type { Store } from '../store/store.ts';
import type { UpdateService } from '../update-service.ts';
import type { StartAsync } from '../async-updates.ts';
import { callerProject } from './caller-project.ts';

/** `GET|POST /v1/update`: runs an update of one of the caller's projects. */
export function updateRoute({ store, updates, startAsync }: { store: Store; updates: UpdateService; startAsync: StartAsync }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, { query: updateQuerySchema, body: updateBodySchema });
    const project = await callerProject(store, req, params.url);
    const request = { project, devices: params.device ? [params.device] : DEVICES, updateType: params.updateType, requestId: req.requestId };
    if (params.mode === 'async') {
      res.json({ ok: 1, id: await startAsync(request) });
      return;
    }
    const outcome = await updates.run(request);
    res.json(toAuditResult({ date: outcome.date, available: outcome.results, results: outcome.results, missing: outcome.missing }, project));
  };
}

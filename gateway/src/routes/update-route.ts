import type { Request, Response } from 'express';
import { ApiError, DEVICES } from '@perfwatch/common';
import { toAuditResult } from '../audit-view.ts';
import { parseParams, rawParams, updateParamsSchema } from '../request-params.ts';
import type { Store } from '../store/store.ts';
import type { UpdateService } from '../update-service.ts';
import { callerProject } from './caller-project.ts';

/** `GET|POST /v1/update`: runs an update of one of the caller's projects. */
export function updateRoute({ store, updates }: { store: Store; updates: UpdateService }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseParams(updateParamsSchema, rawParams(req));
    if (params.mode === 'async') {
      // Accepting work that a restart could lose would break the service's promise; async
      // updates arrive with the durable JetStream work queue.
      throw new ApiError('BAD_REQUEST', 'mode=async is not available yet; use mode=sync.', ['mode: async is not supported by this version']);
    }
    const project = await callerProject(store, req, params.url);
    const outcome = await updates.run({ project, devices: params.device ? [params.device] : DEVICES, updateType: params.updateType, requestId: req.requestId });
    res.json(toAuditResult({ date: outcome.date, available: outcome.results, results: outcome.results }, project));
  };
}

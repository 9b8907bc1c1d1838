import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, type Flow, type TargetGuard } from '@perfwatch/common';
import { callerProject } from '../accounts/caller-project.ts';
import type { AuditLog } from '../audit-log/audit-log.ts';
import { parseRequest } from '../http/parse-request.ts';
import { forbiddenFlowTargets } from './flow-targets.ts';
import type { ProjectsStore } from './store/projects-store.ts';

/**
 * `GET|PUT|DELETE /v1/projects/flow`: a project's user flow (issue 36). PUT replaces it once
 * every step holds (flowSchema) and every URL it navigates to is one this gateway's address
 * rules allow (the agent checks each again as it goes); DELETE returns the project to a
 * navigation of its URL.
 */
export function flowRoute({
  store,
  guard,
  audit,
}: {
  store: Pick<ProjectsStore, 'findProject' | 'setProjectFlow'>;
  /** The address rules of measured pages and webhooks (PERFWATCH_ALLOW_TARGETS). */
  guard: TargetGuard;
  audit: AuditLog;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.flow);
    const project = await callerProject(store, req, params.url);
    if (params.set) {
      await refuseForbiddenTargets(guard, params.set);
      await store.setProjectFlow(project.id, params.set);
      const kinds = params.set.steps.map((step) => step.kind);
      await audit.record(req.caller!, {
        action: 'flow.set',
        target: project.url,
        details: { steps: kinds.length, timespans: kinds.filter((k) => k === 'timespan').length },
      });
      res.json({ url: project.url, flow: params.set });
      return;
    }
    if (req.method === 'DELETE') {
      if (!project.flow) throw noFlow(project.url);
      await store.setProjectFlow(project.id, null);
      await audit.record(req.caller!, { action: 'flow.removed', target: project.url });
      res.json({ url: project.url, removed: true });
      return;
    }
    res.json({ url: project.url, flow: project.flow });
  };
}

/** A flow that navigates where the address rules forbid is refused by its steps. */
async function refuseForbiddenTargets(guard: TargetGuard, flow: Flow): Promise<void> {
  const refused = await forbiddenFlowTargets(guard, flow);
  if (refused.length > 0)
    throw new ApiError('BAD_REQUEST', 'The flow navigates to an address agents may not reach.', refused);
}

const noFlow = (url: string) =>
  new ApiError('NOT_FOUND', 'This project has no flow.', [`url: ${url} has no flow; PUT one`]);

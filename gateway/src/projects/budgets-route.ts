import type { Request, Response } from 'express';
import { API_ENDPOINTS, type ProjectBudgets } from '@perfwatch/common';
import type { AuditLog } from '../audit-log/audit-log.ts';
import { settingDetails } from '../audit-log/audit-details.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from './store/projects-store.ts';
import { callerProject } from '../accounts/caller-project.ts';

/**
 * `GET|POST /v1/budgets`: a project's budgets, read, or replaced when any limit is given. Every
 * snapshot stored afterwards is checked against them (budget-alerts.ts).
 */
export function budgetsRoute({
  store,
  audit,
}: {
  store: Pick<ProjectsStore, 'findProject' | 'setProjectBudgets'>;
  audit: AuditLog;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.budgets);
    const project = await callerProject(store, req, params.url);
    const budgets = params.set ?? project.budgets;
    if (params.set) {
      await store.setProjectBudgets(project.id, params.set);
      await audit.record(req.caller!, {
        action: 'budgets.replaced',
        target: project.url,
        details: settingDetails(params.set),
      });
    }
    res.json({ url: project.url, ...budgets } satisfies ProjectBudgets);
  };
}

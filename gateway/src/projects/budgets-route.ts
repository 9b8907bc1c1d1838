import type { Request, Response } from 'express';
import { API_ENDPOINTS, type ProjectBudgets } from '@perfwatch/common';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from './store/projects-store.ts';
import { callerProject } from '../accounts/caller-project.ts';

/**
 * `GET|POST /v1/budgets`: a project's budgets, read, or replaced when any limit is given. Every
 * snapshot stored afterwards is checked against them (budget-alerts.ts).
 */
export function budgetsRoute({ store }: { store: Pick<ProjectsStore, 'findProject' | 'setProjectBudgets'> }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.budgets);
    const project = await callerProject(store, req, params.url);
    const budgets = params.set ?? project.budgets;
    if (params.set) await store.setProjectBudgets(project.id, params.set);
    res.json({ url: project.url, ...budgets } satisfies ProjectBudgets);
  };
}

import type { Request, Response } from 'express';
import { API_ENDPOINTS, type ProjectList } from '@perfwatch/common';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from './store/projects-store.ts';

/** `GET|POST /v1/projects`: the caller's projects, ordered by URL; what a dashboard or client offers to pick from. */
export function projectsRoute({ store }: { store: Pick<ProjectsStore, 'listProjects'> }) {
  return async (req: Request, res: Response): Promise<void> => {
    parseRequest(req, API_ENDPOINTS.projects);
    const projects = req.caller ? await store.listProjects(req.caller.userId) : [];
    const list: ProjectList = {
      projects: projects
        .map(({ url, domain, locations, defaultLocation, runs, schedule }) => ({
          url,
          domain,
          locations,
          defaultLocation,
          runs,
          schedule,
        }))
        .sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0)),
    };
    res.json(list);
  };
}

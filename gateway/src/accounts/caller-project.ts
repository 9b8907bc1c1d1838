import type { Request } from 'express';
import { ApiError } from '@perfwatch/common';
import type { Caller } from '../http/auth.ts';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';

/** Whether the caller sees the project at `url`: a `ci` token only the projects it lists. */
export const callerSees = (caller: Pick<Caller, 'projects'>, url: string): boolean =>
  caller.projects === null || caller.projects.includes(url);

/**
 * The caller's project with that URL (given as the request's `parameter`). Another
 * organisation's project, and one a `ci` token does not list, is reported exactly like a
 * missing one, so a caller cannot learn which URLs others monitor.
 */
export async function callerProject(
  store: Pick<ProjectsStore, 'findProject'>,
  req: Request,
  url: string,
  parameter = 'url',
): Promise<ProjectRecord> {
  const caller = req.caller;
  const project = caller && callerSees(caller, url) ? await store.findProject(caller.orgId, url) : null;
  if (!project)
    throw new ApiError('NOT_FOUND', 'Project not found.', [`${parameter}: no project of yours has the URL ${url}`]);
  return project;
}

import type { Request } from 'express';
import { ApiError } from '@perfwatch/common';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';

/**
 * The caller's project with that URL (given as the request's `parameter`). Another user's
 * project is reported exactly like a missing one, so a caller cannot learn which URLs other
 * users monitor.
 */
export async function callerProject(
  store: Pick<ProjectsStore, 'findProject'>,
  req: Request,
  url: string,
  parameter = 'url',
): Promise<ProjectRecord> {
  const project = req.caller ? await store.findProject(req.caller.userId, url) : null;
  if (!project)
    throw new ApiError('NOT_FOUND', 'Project not found.', [`${parameter}: no project of yours has the URL ${url}`]);
  return project;
}

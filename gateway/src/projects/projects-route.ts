import type { Request, Response } from 'express';
import {
  API_ENDPOINTS,
  ApiError,
  type ApiAnswer,
  type ProjectList,
  type ProjectView,
  type ProjectsParams,
} from '@perfwatch/common';
import { callerSees } from '../accounts/caller-project.ts';
import type { AuditLog, AuditRecord } from '../audit-log/audit-log.ts';
import { settingDetails } from '../audit-log/audit-details.ts';
import { parseRequest } from '../http/parse-request.ts';
import { DuplicateError } from '../store/store.ts';
import { changedSettings, projectSettings, ProjectSettingsError } from './project-settings.ts';
import type { ProjectRecord, ProjectsStore } from './store/projects-store.ts';

type ProjectsRouteStore = Pick<
  ProjectsStore,
  'listProjects' | 'addProject' | 'findProject' | 'setProjectSettings' | 'removeProject'
>;

/** A project as the API shows it: devices and crux once set, so a project that never set them keeps its answer. */
const viewOf = ({
  url,
  domain,
  locations,
  defaultLocation,
  runs,
  schedule,
  devices,
  crux,
}: ProjectRecord): ProjectView => ({
  url,
  domain,
  locations,
  defaultLocation,
  runs,
  schedule,
  ...(devices === null ? {} : { devices }),
  ...(crux === null ? {} : { crux }),
});

/**
 * `/v1/projects`: the caller's projects, ordered by URL (GET, an empty POST); a new one (POST
 * with a url), a change of one's settings (PATCH), its removal with its data (DELETE). The
 * settings follow the rules `perfwatch admin add-project` follows (project-settings.ts).
 */
export function projectsRoute({ store, audit }: { store: ProjectsRouteStore; audit: AuditLog }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params: ProjectsParams = parseRequest(req, API_ENDPOINTS.projects);
    const caller = req.caller;
    if (caller === undefined || params.action === 'list') {
      const projects = caller === undefined ? [] : await store.listProjects(caller.orgId);
      const list: ProjectList = {
        projects: projects
          .filter((project) => callerSees(caller!, project.url))
          .map(viewOf)
          .sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0)),
      };
      res.json(list);
      return;
    }
    const answer: ApiAnswer<'projects'> = await changeProjects(store, caller.orgId, params);
    await audit.record(caller, auditRecordOf(params));
    res.json(answer);
  };
}

/** The audit log's entry of a change made. */
const auditRecordOf = (params: Exclude<ProjectsParams, { action: 'list' }>): AuditRecord =>
  params.action === 'create'
    ? { action: 'project.created', target: params.url, details: settingDetails(params.settings) }
    : params.action === 'change'
      ? { action: 'project.changed', target: params.url, details: settingDetails(params.changes) }
      : { action: 'project.removed', target: params.url };

async function changeProjects(
  store: ProjectsRouteStore,
  userId: string,
  params: Exclude<ProjectsParams, { action: 'list' }>,
): Promise<ApiAnswer<'projects'>> {
  if (params.action === 'create') {
    const settings = checked(() => projectSettings(params.url, params.settings));
    try {
      return { project: viewOf(await store.addProject({ userId, ...settings })), created: true };
    } catch (error) {
      if (!(error instanceof DuplicateError)) throw error;
      throw new ApiError('CONFLICT', 'The caller already has a project at that URL.', [`url: ${settings.url} exists`]);
    }
  }
  if (params.action === 'remove') {
    if (!(await store.removeProject(userId, params.url))) throw notFound(params.url);
    return { url: params.url, removed: true };
  }
  const project = await store.findProject(userId, params.url);
  if (!project) throw notFound(params.url);
  const settings = checked(() => changedSettings(project, params.changes));
  await store.setProjectSettings(project.id, settings);
  return { project: viewOf({ ...project, ...settings }), created: false };
}

/** Another user's project is as absent as one nobody has (as callerProject says it). */
const notFound = (url: string) =>
  new ApiError('NOT_FOUND', 'Project not found.', [`url: no project of yours has the URL ${url}`]);

/** The shared rules' refusal as a 400 naming the field. */
function checked<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof ProjectSettingsError)) throw error;
    throw new ApiError('BAD_REQUEST', 'The request has invalid parameters.', [`${error.field}: ${error.message}`]);
  }
}

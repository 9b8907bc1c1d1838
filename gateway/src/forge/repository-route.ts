import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError } from '@perfwatch/common';
import type { SecretBox } from '../accounts/secret-box.ts';
import { callerProject } from '../accounts/caller-project.ts';
import type { AuditLog } from '../audit-log/audit-log.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import { linkRecord, linkView } from './forge-link.ts';
import type { ForgeStore } from './store/forge-store.ts';

/**
 * `GET|PUT|DELETE /v1/projects/repository`: a project's link to its repository. PUT replaces it
 * (the forge token and the webhook secret sealed with PERFWATCH_SECRETS_KEY, GitLab's webhook
 * token kept as a digest); no answer ever carries a secret.
 */
export function repositoryRoute({
  store,
  secrets,
  audit,
  now = () => new Date(),
}: {
  store: Pick<ProjectsStore, 'findProject'> & Pick<ForgeStore, 'findForgeLink' | 'setForgeLink' | 'removeForgeLink'>;
  secrets: SecretBox;
  audit: AuditLog;
  now?: () => Date;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.repository);
    const project = await callerProject(store, req, params.url);
    res.set('Cache-Control', 'no-store');
    if (params.set) {
      if (!secrets.ready)
        throw new ApiError('SERVICE_UNAVAILABLE', 'This gateway cannot keep a forge token.', [
          'the gateway has no PERFWATCH_SECRETS_KEY',
        ]);
      const link = linkRecord(secrets, project, params.set, now());
      await store.setForgeLink(link);
      // Which repository, never its token or webhook secret.
      const { forge, repository, apiUrl } = params.set;
      await audit.record(req.caller!, {
        action: 'repository.linked',
        target: project.url,
        details: { forge, repository, apiUrl: apiUrl ?? null },
      });
      res.json(linkView(project.url, link));
      return;
    }
    if (req.method === 'DELETE') {
      if (!(await store.removeForgeLink(project.id))) throw notLinked(project.url);
      await audit.record(req.caller!, { action: 'repository.unlinked', target: project.url });
      res.json({ url: project.url, removed: true });
      return;
    }
    const link = await store.findForgeLink(project.id);
    if (!link) throw notLinked(project.url);
    res.json(linkView(project.url, link));
  };
}

const notLinked = (url: string) =>
  new ApiError('NOT_FOUND', 'This project is linked to no repository.', [
    `url: ${url} has no repository link; PUT one`,
  ]);

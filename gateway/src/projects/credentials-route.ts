import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, type CredentialsView, type PageAuth } from '@perfwatch/common';
import { openProjectAuth, sealProjectAuth } from './project-auth.ts';
import type { AuditLog } from '../audit-log/audit-log.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { SecretBox } from '../accounts/secret-box.ts';
import { locationsNotTrusted, untrustedReasons, type CredentialTrust } from './credential-trust.ts';
import type { ProjectsStore } from './store/projects-store.ts';
import { callerProject } from '../accounts/caller-project.ts';

const view = (url: string, auth: PageAuth | undefined): CredentialsView => ({
  url,
  configured: auth !== undefined,
  cookies: auth?.cookies?.map((c) => c.name) ?? [],
  headers: Object.keys(auth?.headers ?? {}),
  loginSteps: auth?.login?.length ?? 0,
});

/**
 * `GET|POST /v1/credentials`: whether a project has credentials for its login, by name only;
 * POST with `auth` replaces them (sealed with PERFWATCH_SECRETS_KEY), `clear` forgets them.
 */
export function credentialsRoute({
  store,
  secrets,
  credentialTrust,
  audit,
}: {
  store: Pick<ProjectsStore, 'findProject' | 'setProjectAuth'>;
  secrets: SecretBox;
  credentialTrust: CredentialTrust;
  audit: AuditLog;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.credentials);
    const project = await callerProject(store, req, params.url);
    res.set('Cache-Control', 'no-store');
    if (params.clear) {
      await store.setProjectAuth(project.id, null);
      await audit.record(req.caller!, { action: 'credentials.cleared', target: project.url });
      res.json(view(project.url, undefined));
      return;
    }
    if (params.set) {
      if (!secrets.ready)
        throw new ApiError('SERVICE_UNAVAILABLE', 'This gateway cannot keep credentials.', [
          'the gateway has no PERFWATCH_SECRETS_KEY',
        ]);
      // Kept only where they can be used: every location of the project may be sent them.
      const untrusted = locationsNotTrusted(credentialTrust, project.locations);
      if (untrusted.length > 0)
        throw new ApiError(
          'BAD_REQUEST',
          `Credentials cannot be kept for this project: they would go to ${untrusted.join(', ')}, whose agents this gateway does not trust with them.`,
          untrustedReasons(credentialTrust, untrusted),
        );
      await store.setProjectAuth(project.id, sealProjectAuth(secrets, project, params.set));
      // How many of each, never a name's value.
      const { cookies, headers, loginSteps } = view(project.url, params.set);
      await audit.record(req.caller!, {
        action: 'credentials.set',
        target: project.url,
        details: { cookies: cookies.length, headers: headers.length, loginSteps },
      });
      res.json(view(project.url, params.set));
      return;
    }
    let auth: PageAuth | undefined;
    try {
      auth = secrets.ready || !project.auth ? openProjectAuth(secrets, project) : undefined;
    } catch {
      auth = undefined;
    }
    // Sealed under a key this gateway lacks: configured, names unknown here.
    res.json(project.auth && !auth ? { ...view(project.url, undefined), configured: true } : view(project.url, auth));
  };
}

import { z } from 'zod';
import { COMMIT_PATTERN, isBranchName, type Forge, type Revision } from '@perfwatch/common';
import { repositoryKeyOf } from './store/forge-store.ts';

/**
 * What the receiver reads of each forge's event: only the fields it uses, each bounded, every
 * object loose (forges add fields freely). The repository a payload names is read first, and
 * only to choose whose secrets the signature is checked against; nothing else of a payload is
 * read before its signature verifies.
 */

const name = z.string().min(1).max(255);
/** Forges send an empty string as readily as null for a URL they do not have. */
const optionalUrl = z.string().max(2048).nullish();
const sha = z.string().regex(COMMIT_PATTERN);
const ref = z.string().min(1).max(255);
const id = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

const repositoryOf = {
  github: z.looseObject({ repository: z.looseObject({ full_name: name }) }),
  gitea: z.looseObject({ repository: z.looseObject({ full_name: name }) }),
  gitlab: z.looseObject({ project: z.looseObject({ id: id.optional(), path_with_namespace: name.optional() }) }),
};

/** The keys a payload's repository may be linked under (GitLab: its path and its id); none when it names none. */
export function payloadRepositoryKeys(forge: Forge, payload: unknown): string[] {
  if (forge === 'gitlab') {
    const parsed = repositoryOf.gitlab.safeParse(payload);
    if (!parsed.success) return [];
    const { id: projectId, path_with_namespace: path } = parsed.data.project;
    return [path?.toLowerCase(), projectId === undefined ? undefined : String(projectId)].filter(
      (k): k is string => k !== undefined,
    );
  }
  const parsed = repositoryOf[forge].safeParse(payload);
  return parsed.success ? [repositoryKeyOf(parsed.data.repository.full_name)] : [];
}

const githubDeploymentStatus = z.looseObject({
  deployment_status: z.looseObject({
    id,
    state: z.string().max(64),
    environment_url: optionalUrl,
    target_url: optionalUrl,
  }),
  deployment: z.looseObject({ sha, ref }),
});

const gitlabDeployment = z.looseObject({
  status: z.string().max(64),
  deployment_id: id,
  environment_external_url: optionalUrl,
  sha,
  ref,
  project: z.looseObject({ id }),
});

const GITEA_ACTIONS = ['opened', 'synchronized', 'reopened'];
const giteaPullRequest = z.looseObject({
  action: z.string().max(64),
  number: z.number().int().min(1).max(2_147_483_647),
  pull_request: z.looseObject({ head: z.looseObject({ sha, ref }) }),
  repository: z.looseObject({ full_name: name }),
});

/** A deployment (or pull request) to measure: its key, the preview origin it names (or none), the revision. */
export interface PreviewEvent {
  key: string;
  origin: string | null;
  revision: Revision;
}
export type ReadEvent = { preview: PreviewEvent } | { ignored: string };

/** What the forge says the event is, from its header. */
export const EVENT_HEADERS: Readonly<Record<Forge, string>> = {
  github: 'x-github-event',
  gitlab: 'x-gitlab-event',
  gitea: 'x-gitea-event',
};

const branchOf = (text: string): string | undefined => {
  const branch = text.replace(/^refs\/heads\//, '');
  return isBranchName(branch) && !COMMIT_PATTERN.test(branch) ? branch : undefined;
};

const invalid = (what: string, error: z.ZodError): ReadEvent => ({
  ignored: `not a ${what} this receiver can read (${error.issues[0]?.path.join('.') || 'payload'}: ${error.issues[0]?.message})`,
});

/** A verified event read: a preview to measure, or why it is ignored. */
export function readForgeEvent(forge: Forge, event: string | undefined, payload: unknown): ReadEvent {
  if (forge === 'github') return readGithub(event, payload);
  if (forge === 'gitlab') return readGitlab(event, payload);
  return readGitea(event, payload);
}

function readGithub(event: string | undefined, payload: unknown): ReadEvent {
  if (event !== 'deployment_status') return { ignored: `event ${event ?? '(none)'} is not deployment_status` };
  const parsed = githubDeploymentStatus.safeParse(payload);
  if (!parsed.success) return invalid('deployment_status event', parsed.error);
  const { deployment_status: status, deployment } = parsed.data;
  if (status.state !== 'success') return { ignored: `deployment state ${status.state} is not success` };
  const branch = branchOf(deployment.ref);
  return {
    preview: {
      key: `github:${status.id}`,
      // environment_url only: target_url (log_url) is where the deployment's log is, a page of
      // the CI or of GitHub itself, not the preview.
      origin: status.environment_url || null,
      revision: { commit: deployment.sha.toLowerCase(), ...(branch ? { branch } : {}) },
    },
  };
}

function readGitlab(event: string | undefined, payload: unknown): ReadEvent {
  if (event !== 'Deployment Hook') return { ignored: `event ${event ?? '(none)'} is not Deployment Hook` };
  const parsed = gitlabDeployment.safeParse(payload);
  if (!parsed.success) return invalid('deployment event', parsed.error);
  const deployment = parsed.data;
  if (deployment.status !== 'success') return { ignored: `deployment status ${deployment.status} is not success` };
  const branch = branchOf(deployment.ref);
  return {
    preview: {
      key: `gitlab:${deployment.project.id}:${deployment.deployment_id}:${deployment.status}`,
      origin: deployment.environment_external_url || null,
      revision: { commit: deployment.sha.toLowerCase(), ...(branch ? { branch } : {}) },
    },
  };
}

function readGitea(event: string | undefined, payload: unknown): ReadEvent {
  if (event !== 'pull_request') return { ignored: `event ${event ?? '(none)'} is not pull_request` };
  const parsed = giteaPullRequest.safeParse(payload);
  if (!parsed.success) return invalid('pull_request event', parsed.error);
  const { action, number, pull_request: pr, repository } = parsed.data;
  if (!GITEA_ACTIONS.includes(action)) return { ignored: `pull request action ${action} is not measured` };
  const commit = pr.head.sha.toLowerCase();
  const branch = branchOf(pr.head.ref);
  return {
    preview: {
      key: `gitea:${repository.full_name.toLowerCase()}:${number}:${commit}`,
      origin: null,
      revision: { commit, ...(branch ? { branch } : {}), pullRequest: number },
    },
  };
}

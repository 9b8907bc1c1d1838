import { z } from 'zod';
import { parseEnv } from '../env-config.ts';
import { ConfigError } from '../errors.ts';
import { COMMIT_PATTERN, isBranchName, MAX_PULL_REQUEST } from '../revision.ts';
import type { Forge, ForgeTarget } from './forge-client.ts';

/** What a CI job tells perfwatch about the change it measures, and where to report it. */
export interface CiChange {
  target: ForgeTarget;
  /** The commit statuses go on: a pull request's head, not the merge commit GitHub checks out. */
  commit: string;
  branch?: string;
  /** The pull (merge) request the job runs for; absent on a push. */
  pullRequest?: number;
}

type Env = Readonly<Record<string, string | undefined>>;

const commit = z
  .string()
  .transform((text) => text.toLowerCase())
  .pipe(z.string().regex(COMMIT_PATTERN, 'must be a commit hash'));
const number = z.coerce.number().int().min(1).max(MAX_PULL_REQUEST);
const url = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const text = z.string().min(1);

/** GitHub Actions and Gitea Actions (which sets the same variables, and a few GITEA_ ones). */
const githubEnvSchema = z.object({
  GITHUB_REPOSITORY: text.regex(/^[^/\s]+\/[^/\s]+$/, 'must be owner/name'),
  GITHUB_SHA: commit,
  GITHUB_API_URL: url.optional(),
  GITHUB_SERVER_URL: url.optional(),
  GITHUB_REF: z.string().optional(),
  GITHUB_HEAD_REF: z.string().optional(),
  GITHUB_REF_NAME: z.string().optional(),
  GITHUB_EVENT_PATH: z.string().optional(),
});
const githubTokenSchema = z.object({ GITHUB_TOKEN: text });
const giteaTokenSchema = z.union([z.object({ GITEA_TOKEN: text }), z.object({ GITHUB_TOKEN: text })], {
  error: 'set GITEA_TOKEN (or GITHUB_TOKEN) to a token that may write statuses and comments',
});

/** GitLab CI: a project or personal access token with the `api` scope (CI_JOB_TOKEN may not post notes). */
const gitlabEnvSchema = z.object({
  CI_API_V4_URL: url,
  CI_PROJECT_ID: text,
  CI_COMMIT_SHA: commit,
  CI_MERGE_REQUEST_IID: number.optional(),
  // Set (non-empty) only in merged results pipelines, where CI_COMMIT_SHA is the merge commit.
  CI_MERGE_REQUEST_SOURCE_BRANCH_SHA: z.union([z.literal(''), commit]).optional(),
  CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: z.string().optional(),
  CI_COMMIT_REF_NAME: z.string().optional(),
  GITLAB_TOKEN: text,
});

/** The pull request of a GitHub-style event payload, if it is one. */
const eventSchema = z.looseObject({
  pull_request: z
    .looseObject({
      number: number,
      head: z.looseObject({ sha: commit, ref: z.string().optional() }),
    })
    .optional(),
});

/** An event payload is a few kB; a bound keeps a stray path from reading a huge file. */
const MAX_EVENT_BYTES = 25 * 1024 * 1024;

export type ReadText = (path: string, maxBytes: number) => string;

const branchOf = (...names: Array<string | undefined>) => names.find((n) => n !== undefined && isBranchName(n));

function githubChange(forge: 'github' | 'gitea', env: Env, readText: ReadText): CiChange {
  const vars = parseEnv(githubEnvSchema, env);
  const tokens = parseEnv(forge === 'github' ? githubTokenSchema : giteaTokenSchema, env);
  const token = 'GITEA_TOKEN' in tokens ? tokens.GITEA_TOKEN : tokens.GITHUB_TOKEN;
  const server = vars.GITHUB_SERVER_URL?.replace(/\/+$/, '');
  const apiUrl =
    vars.GITHUB_API_URL ?? (forge === 'github' ? 'https://api.github.com' : server ? `${server}/api/v1` : undefined);
  if (!apiUrl)
    throw new ConfigError([
      "GITHUB_API_URL (or GITHUB_SERVER_URL): Gitea's API is needed, e.g. https://gitea.example/api/v1",
    ]);
  let event: z.infer<typeof eventSchema> = {};
  if (vars.GITHUB_EVENT_PATH) {
    const parsed = eventSchema.safeParse(JSON.parse(readText(vars.GITHUB_EVENT_PATH, MAX_EVENT_BYTES)));
    if (!parsed.success) throw new ConfigError([`GITHUB_EVENT_PATH: its pull_request is not as GitHub sends it`]);
    event = parsed.data;
  }
  const fromRef = /^refs\/pull\/(\d+)\/(?:merge|head)$/.exec(vars.GITHUB_REF ?? '')?.[1];
  const pullRequest = event.pull_request?.number ?? (fromRef === undefined ? undefined : Number(fromRef));
  return {
    target: { forge, apiUrl, repository: vars.GITHUB_REPOSITORY, token },
    commit: event.pull_request?.head.sha ?? vars.GITHUB_SHA,
    branch: branchOf(event.pull_request?.head.ref, vars.GITHUB_HEAD_REF || undefined, vars.GITHUB_REF_NAME),
    pullRequest,
  };
}

function gitlabChange(env: Env): CiChange {
  const vars = parseEnv(gitlabEnvSchema, env);
  return {
    target: { forge: 'gitlab', apiUrl: vars.CI_API_V4_URL, repository: vars.CI_PROJECT_ID, token: vars.GITLAB_TOKEN },
    // Statuses go on the merge request's head, as on GitHub: not on a merged results pipeline's merge commit.
    commit: vars.CI_MERGE_REQUEST_SOURCE_BRANCH_SHA || vars.CI_COMMIT_SHA,
    branch: branchOf(vars.CI_MERGE_REQUEST_SOURCE_BRANCH_NAME, vars.CI_COMMIT_REF_NAME),
    pullRequest: vars.CI_MERGE_REQUEST_IID,
  };
}

/**
 * The change a CI job measures, read from the CI's own variables (GitHub Actions, GitLab CI,
 * Gitea Actions). A variable missing or malformed is a ConfigError naming every one at once,
 * raised before anything is measured.
 */
export function ciChangeOf(forge: Forge, env: Env, readText: ReadText): CiChange {
  return forge === 'gitlab' ? gitlabChange(env) : githubChange(forge, env, readText);
}

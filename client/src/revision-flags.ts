import {
  isBranchName,
  parseCommit,
  parsePullRequest,
  revisionOf,
  UsageError,
  type AuditResult,
  type Revision,
} from '@perfwatch/common';

/** `--commit SHA --branch NAME --pull-request N`: the code change an update measures. */
export interface RevisionFlags {
  commit?: string;
  branch?: string;
  'pull-request'?: string;
}

export const REVISION_OPTIONS = {
  commit: { type: 'string' },
  branch: { type: 'string' },
  'pull-request': { type: 'string' },
} as const;

/**
 * The flags as the API's parameters, flat, checked by the API's own rules first: a CI job with
 * a wrong variable in its command line learns so before minutes of runs, not after.
 */
export function revisionOfFlags(flags: RevisionFlags): Revision {
  const commit = flags.commit === undefined ? undefined : parseCommit(flags.commit);
  if (commit === null) throw new UsageError('--commit must be a git commit hash: 7 to 64 hex digits');
  if (flags.branch !== undefined && !isBranchName(flags.branch))
    throw new UsageError('--branch must be a git branch name');
  const pr = flags['pull-request'];
  const pullRequest = pr === undefined ? undefined : parsePullRequest(pr);
  if (pullRequest === null) throw new UsageError('--pull-request must be a pull or merge request number');
  return revisionOf({ commit, branch: flags.branch, pullRequest }) ?? {};
}

/** " (branch main, commit 3f9c2a1, pull request #12)", or nothing. */
export function revisionText(revision: Revision | undefined): string {
  const parts = [
    revision?.branch === undefined ? null : `branch ${revision.branch}`,
    revision?.commit === undefined ? null : `commit ${revision.commit}`,
    revision?.pullRequest === undefined ? null : `pull request #${revision.pullRequest}`,
  ].filter((part) => part !== null);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

/** "URL at DATE", and the code change measured when the result has one: a result table's heading. */
export function resultHeading(url: string, date: string, result: AuditResult): string {
  const cell = Object.values(result)
    .flatMap((byLocation) => (Array.isArray(byLocation) ? [] : Object.values(byLocation ?? {})))
    .find((c) => c !== undefined && 'revision' in c);
  return `${url} at ${date}${revisionText(cell?.revision)}`;
}

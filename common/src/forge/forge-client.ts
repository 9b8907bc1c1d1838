/**
 * What perfwatch asks of a forge (GitHub, GitLab, Gitea): a commit status per measured cell, one
 * comment on the pull or merge request that it finds again and edits, and the pull requests a
 * commit belongs to. Each forge's client maps these onto its own REST API.
 */

export const FORGES = ['github', 'gitlab', 'gitea'] as const;
export type Forge = (typeof FORGES)[number];

/** A status's state in perfwatch's terms; each client maps it to its forge's word (GitLab says `failed`). */
export type StatusState = 'success' | 'failure' | 'error' | 'pending';

export interface CommitStatus {
  /** `perfwatch/<device>/<location>`: one status per cell, replaced by the next run's. */
  context: string;
  state: StatusState;
  /** The key numbers; cut to the forge's limit (GitHub keeps 140 characters). */
  description: string;
  /** The dashboard's compare view of this cell. */
  targetUrl?: string;
}

export interface ForgeComment {
  id: number;
  body: string;
}

export interface ForgeClient {
  readonly forge: Forge;
  setStatus(commit: string, status: CommitStatus): Promise<void>;
  /** Every comment of the pull (merge) request, oldest first, read page by page up to a bound. */
  listComments(pullRequest: number): Promise<ForgeComment[]>;
  createComment(pullRequest: number, body: string): Promise<void>;
  updateComment(pullRequest: number, id: number, body: string): Promise<void>;
  /** The open pull (merge) requests whose head is the commit, by number. */
  pullRequestsOf(commit: string): Promise<number[]>;
}

/** Where a client finds its forge and the repository, and the token it authenticates with. */
export interface ForgeTarget {
  forge: Forge;
  /** The REST API's base: https://api.github.com, https://gitlab.example/api/v4, https://gitea.example/api/v1. */
  apiUrl: string;
  /** `owner/name` (GitHub, Gitea); a GitLab project's id or its path with namespace. */
  repository: string;
  token: string;
}

/** The longest status description sent: GitHub's limit, the strictest of the three. */
export const MAX_STATUS_DESCRIPTION = 140;

/** Comments read when looking for perfwatch's own: 30 pages of 100, far beyond any real pull request. */
export const MAX_COMMENT_PAGES = 30;

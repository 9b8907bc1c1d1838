import { z } from 'zod';
import {
  MAX_COMMENT_PAGES,
  MAX_STATUS_DESCRIPTION,
  type CommitStatus,
  type ForgeClient,
  type ForgeComment,
  type ForgeTarget,
  type StatusState,
} from './forge-client.ts';
import { forgeRequest, type Fetch } from './forge-request.ts';

const commentsSchema = z.array(z.looseObject({ id: z.number().int(), body: z.string().nullish() }));
const pullsSchema = z.array(
  z.looseObject({
    number: z.number().int(),
    state: z.string().optional(),
    head: z.looseObject({ sha: z.string().optional() }).optional(),
  }),
);

/** GitHub's statuses take these four; Gitea's take them too (and `warning`, unused). */
const STATE: Record<StatusState, string> = {
  success: 'success',
  failure: 'failure',
  error: 'error',
  pending: 'pending',
};

const PAGE_SIZE = 100;

/** The `rel="next"` page of a Link header, if any. */
function nextPage(link: string | null): string | undefined {
  return link
    ?.split(',')
    .map((part) => /<([^>]+)>\s*;\s*rel="next"/.exec(part)?.[1])
    .find((url) => url !== undefined);
}

/**
 * GitHub's REST API and Gitea's, which copies it for the calls used here (statuses, issue
 * comments, a commit's pull requests) under /api/v1. A small fetch client rather than
 * @octokit/rest: five calls, one fetch to inject in tests, and Gitea served by the same code.
 */
class GithubClient implements ForgeClient {
  readonly forge: ForgeTarget['forge'];
  readonly #api: string;
  readonly #repo: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: Fetch;

  constructor(target: ForgeTarget, fetchFn: Fetch) {
    this.forge = target.forge;
    this.#fetch = fetchFn;
    this.#api = target.apiUrl.replace(/\/+$/, '');
    const [owner = '', name = ''] = target.repository.split('/');
    this.#repo = `${this.#api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}`;
    this.#headers = {
      accept: 'application/vnd.github+json',
      'user-agent': 'perfwatch',
      ...(target.forge === 'github'
        ? { authorization: `Bearer ${target.token}`, 'x-github-api-version': '2022-11-28' }
        : { authorization: `token ${target.token}` }),
    };
  }

  async setStatus(commit: string, status: CommitStatus): Promise<void> {
    await forgeRequest(this.#fetch, {
      method: 'POST',
      url: `${this.#repo}/statuses/${encodeURIComponent(commit)}`,
      headers: this.#headers,
      body: {
        state: STATE[status.state],
        context: status.context,
        description: status.description.slice(0, MAX_STATUS_DESCRIPTION),
        ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
      },
      what: `status ${status.context} on ${commit.slice(0, 7)}`,
    });
  }

  async listComments(pullRequest: number): Promise<ForgeComment[]> {
    const comments: ForgeComment[] = [];
    // Gitea answers every comment at once and sends no Link header: one page.
    let url: string | undefined = `${this.#repo}/issues/${pullRequest}/comments?per_page=${PAGE_SIZE}`;
    for (let page = 0; url && page < MAX_COMMENT_PAGES; page++) {
      const { value, headers } = await forgeRequest(this.#fetch, {
        method: 'GET',
        url,
        headers: this.#headers,
        what: `comments of #${pullRequest}`,
        answer: commentsSchema,
      });
      comments.push(...value.map((c) => ({ id: c.id, body: c.body ?? '' })));
      const next = nextPage(headers.get('link'));
      // Follow only the forge's own pages, never a Link to another host.
      url = next && new URL(next).origin === new URL(this.#api).origin ? next : undefined;
    }
    return comments;
  }

  async createComment(pullRequest: number, body: string): Promise<void> {
    await forgeRequest(this.#fetch, {
      method: 'POST',
      url: `${this.#repo}/issues/${pullRequest}/comments`,
      headers: this.#headers,
      body: { body },
      what: `comment on #${pullRequest}`,
    });
  }

  async updateComment(pullRequest: number, id: number, body: string): Promise<void> {
    await forgeRequest(this.#fetch, {
      method: 'PATCH',
      url: `${this.#repo}/issues/comments/${id}`,
      headers: this.#headers,
      body: { body },
      what: `comment ${id} on #${pullRequest}`,
    });
  }

  async pullRequestsOf(commit: string): Promise<number[]> {
    // GitHub lists a commit's pull requests; Gitea only its merged one, so its open pulls
    // are read and matched by their head.
    const { value } = await forgeRequest(this.#fetch, {
      method: 'GET',
      url:
        this.forge === 'github'
          ? `${this.#repo}/commits/${encodeURIComponent(commit)}/pulls`
          : `${this.#repo}/pulls?state=open&limit=50`,
      headers: this.#headers,
      what: `pull requests of ${commit.slice(0, 7)}`,
      answer: pullsSchema,
    });
    return (
      value
        .filter((pull) => (pull.state ?? 'open') === 'open')
        // Only the pull requests this commit is the head of: GitHub also lists those that merely
        // contain it (a stacked pull request's base), which this change is not the subject of.
        .filter((pull) => pull.head?.sha === commit)
        .map((pull) => pull.number)
    );
  }
}

export function githubClient(target: ForgeTarget, fetchFn: Fetch = fetch): ForgeClient {
  return new GithubClient(target, fetchFn);
}

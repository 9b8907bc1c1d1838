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
import { ForgeError } from './forge-errors.ts';
import { forgeRequest, type Fetch } from './forge-request.ts';

const notesSchema = z.array(
  z.looseObject({ id: z.number().int(), body: z.string().nullish(), system: z.boolean().optional() }),
);
const mergeRequestsSchema = z.array(z.looseObject({ iid: z.number().int(), state: z.string().optional() }));

/** GitLab's words for a status's state. */
const STATE: Record<StatusState, string> = {
  success: 'success',
  failure: 'failed',
  error: 'failed',
  pending: 'pending',
};

const PAGE_SIZE = 100;

/**
 * GitLab's REST API v4: commit statuses, merge request notes, a commit's merge requests. A small
 * fetch client rather than @gitbeaker/rest, for the same reasons as githubClient: five calls and
 * one fetch to inject.
 */
class GitlabClient implements ForgeClient {
  readonly forge = 'gitlab' as const;
  readonly #project: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: Fetch;

  constructor(target: ForgeTarget, fetchFn: Fetch) {
    this.#fetch = fetchFn;
    this.#project = `${target.apiUrl.replace(/\/+$/, '')}/projects/${encodeURIComponent(target.repository)}`;
    this.#headers = { 'private-token': target.token, 'user-agent': 'perfwatch' };
  }

  #notes(iid: number): string {
    return `${this.#project}/merge_requests/${iid}/notes`;
  }

  async setStatus(commit: string, status: CommitStatus): Promise<void> {
    try {
      await forgeRequest(this.#fetch, {
        method: 'POST',
        url: `${this.#project}/statuses/${encodeURIComponent(commit)}`,
        headers: this.#headers,
        body: {
          state: STATE[status.state],
          name: status.context,
          description: status.description.slice(0, MAX_STATUS_DESCRIPTION),
          ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
        },
        what: `status ${status.context} on ${commit.slice(0, 7)}`,
      });
    } catch (error) {
      // GitLab refuses to set a status to the state it already has ("Cannot transition
      // status via :drop from :failed"): a re-run with the same outcome has nothing to change.
      if (error instanceof ForgeError && error.status === 400 && /cannot transition status/i.test(error.message))
        return;
      throw error;
    }
  }

  async listComments(mergeRequest: number): Promise<ForgeComment[]> {
    const comments: ForgeComment[] = [];
    for (let page = 1; page <= MAX_COMMENT_PAGES; page++) {
      const { value, headers } = await forgeRequest(this.#fetch, {
        method: 'GET',
        url: `${this.#notes(mergeRequest)}?sort=asc&order_by=created_at&per_page=${PAGE_SIZE}&page=${page}`,
        headers: this.#headers,
        what: `notes of !${mergeRequest}`,
        answer: notesSchema,
      });
      comments.push(...value.filter((n) => !n.system).map((n) => ({ id: n.id, body: n.body ?? '' })));
      const next = Number(headers.get('x-next-page'));
      if (!headers.get('x-next-page') || !Number.isInteger(next) || next <= page) break;
    }
    return comments;
  }

  async createComment(mergeRequest: number, body: string): Promise<void> {
    await forgeRequest(this.#fetch, {
      method: 'POST',
      url: this.#notes(mergeRequest),
      headers: this.#headers,
      body: { body },
      what: `note on !${mergeRequest}`,
    });
  }

  async updateComment(mergeRequest: number, id: number, body: string): Promise<void> {
    await forgeRequest(this.#fetch, {
      method: 'PUT',
      url: `${this.#notes(mergeRequest)}/${id}`,
      headers: this.#headers,
      body: { body },
      what: `note ${id} on !${mergeRequest}`,
    });
  }

  async pullRequestsOf(commit: string): Promise<number[]> {
    const { value } = await forgeRequest(this.#fetch, {
      method: 'GET',
      url: `${this.#project}/repository/commits/${encodeURIComponent(commit)}/merge_requests`,
      headers: this.#headers,
      what: `merge requests of ${commit.slice(0, 7)}`,
      answer: mergeRequestsSchema,
    });
    return value.filter((mr) => (mr.state ?? 'opened') === 'opened').map((mr) => mr.iid);
  }
}

export function gitlabClient(target: ForgeTarget, fetchFn: Fetch = fetch): ForgeClient {
  return new GitlabClient(target, fetchFn);
}

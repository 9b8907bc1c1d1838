import type { CommitStatus, ForgeClient } from './forge-client.ts';
import { ForgeError, type ForgeErrorKind } from './forge-errors.ts';

/** What became of one thing sent to a forge: printed by the CLI, retried by the gateway's reporter. */
export interface ForgeOutcome {
  what: string;
  ok: boolean;
  detail: string;
  kind?: ForgeErrorKind;
  retryAt?: Date;
}

export interface ForgeDelivery {
  commit: string;
  /** Absent: the commit's open pull requests are looked up, and each gets the comment. */
  pullRequest?: number;
  statuses: CommitStatus[];
  comment: string;
  /** The hidden line that finds the comment again (reportMarker). */
  marker: string;
}

/** Pull requests one report comments on at most when they are looked up by commit. */
const MAX_PULL_REQUESTS = 5;

/** Until when a refusal says to wait: the limited step itself may be the last, with none after it to say so. */
const untilText = (error: ForgeError) =>
  error.kind === 'rate-limited' && error.retryAt ? `, rate limited until ${error.retryAt.toISOString()}` : '';

const failure = (what: string, error: unknown): ForgeOutcome =>
  error instanceof ForgeError
    ? { what, ok: false, detail: `${error.message}${untilText(error)}`, kind: error.kind, retryAt: error.retryAt }
    : { what, ok: false, detail: `${what}: ${(error as Error).message}`, kind: 'unavailable' };

/** Edits perfwatch's comment when the pull request has one (found by its marker), or adds it. */
async function upsertComment(client: ForgeClient, pullRequest: number, delivery: ForgeDelivery): Promise<string> {
  const own = (await client.listComments(pullRequest)).find((c) => c.body.includes(delivery.marker));
  if (own) {
    await client.updateComment(pullRequest, own.id, delivery.comment);
    return `comment ${own.id} on #${pullRequest} edited`;
  }
  await client.createComment(pullRequest, delivery.comment);
  return `comment on #${pullRequest} added`;
}

/**
 * Sends a report: every status, then the comment. Never throws: each step's outcome is returned.
 * A rate limit stops the rest (each would be refused too) and says until when.
 */
export async function reportToForge(client: ForgeClient, delivery: ForgeDelivery): Promise<ForgeOutcome[]> {
  const outcomes: ForgeOutcome[] = [];
  let limited: ForgeOutcome | undefined;
  const step = async (what: string, send: () => Promise<string>) => {
    if (limited) {
      const until = limited.retryAt ? ` until ${limited.retryAt.toISOString()}` : '';
      outcomes.push({
        what,
        ok: false,
        detail: `${what}: not sent, rate limited${until}`,
        kind: 'rate-limited',
        retryAt: limited.retryAt,
      });
      return;
    }
    try {
      outcomes.push({ what, ok: true, detail: await send() });
    } catch (error) {
      const outcome = failure(what, error);
      if (outcome.kind === 'rate-limited') limited = outcome;
      outcomes.push(outcome);
    }
  };
  for (const status of delivery.statuses)
    await step(`status ${status.context}`, async () => {
      await client.setStatus(delivery.commit, status);
      return `status ${status.context} ${status.state}`;
    });
  let pullRequests = delivery.pullRequest === undefined ? undefined : [delivery.pullRequest];
  if (!pullRequests)
    await step('pull requests of the commit', async () => {
      pullRequests = (await client.pullRequestsOf(delivery.commit)).slice(0, MAX_PULL_REQUESTS);
      return `${pullRequests.length} open pull request${pullRequests.length === 1 ? '' : 's'} with this commit`;
    });
  for (const pullRequest of pullRequests ?? [])
    await step(`comment on #${pullRequest}`, () => upsertComment(client, pullRequest, delivery));
  return outcomes;
}

import { z } from 'zod';
import { COMMIT_PATTERN, isBranchName, MAX_PULL_REQUEST } from '../revision.ts';
import { once, parsedString } from './request-fields.ts';

/**
 * The parameters naming a code change (revision.ts): given to `/v1/update` to be stored with
 * its snapshot, and to `/v1/overview` to filter by. A query string has only text, so GET's
 * `pullRequest` is read from it; a JSON body gives a number.
 */

const COMMIT_MESSAGE = 'commit must be a git commit hash: 7 to 64 hex digits';
const BRANCH_MESSAGE =
  'branch must be a git branch name (no spaces, ~^:?*[\\, "..", "@{" or "//"; 255 characters at most)';
const PULL_REQUEST_MESSAGE = `pullRequest must be a whole number from 1 to ${MAX_PULL_REQUEST}`;

/** A commit as git prints it, either case; kept lower-case, as revisionSchema has it. */
export function parseCommit(text: string): string | null {
  const commit = text.toLowerCase();
  return COMMIT_PATTERN.test(commit) ? commit : null;
}

/** A pull request number written in decimal, without sign, leading zeros or spaces. */
export function parsePullRequest(text: string): number | null {
  if (!/^[1-9]\d{0,9}$/.test(text)) return null;
  const number = Number(text);
  return number <= MAX_PULL_REQUEST ? number : null;
}

const commit = () => parsedString(z.string(once('commit')), parseCommit, COMMIT_MESSAGE);
const branch = () => parsedString(z.string(once('branch')), (t) => (isBranchName(t) ? t : null), BRANCH_MESSAGE);
const pullRequestText = () =>
  parsedString(z.string(once('pullRequest')), parsePullRequest, PULL_REQUEST_MESSAGE).meta({ example: '42' });
const pullRequestNumber = () =>
  z
    .number({ error: PULL_REQUEST_MESSAGE })
    .int(PULL_REQUEST_MESSAGE)
    .min(1, PULL_REQUEST_MESSAGE)
    .max(MAX_PULL_REQUEST, PULL_REQUEST_MESSAGE);

/** What each parameter says, for the endpoint that takes it. */
interface RevisionDescriptions {
  commit: string;
  branch: string;
  pullRequest: string;
}

/** The three optional parameters of a query string (`pullRequest` as text). */
export const revisionQueryFields = (say: RevisionDescriptions) => ({
  commit: commit().optional().meta({ description: say.commit, example: '3f9c2a1' }),
  branch: branch().optional().meta({ description: say.branch, example: 'main' }),
  pullRequest: pullRequestText().optional().meta({ description: say.pullRequest }),
});

/** The three optional members of a JSON body (`pullRequest` a number). */
export const revisionBodyFields = (say: RevisionDescriptions) => ({
  commit: commit().optional().meta({ description: say.commit, example: '3f9c2a1' }),
  branch: branch().optional().meta({ description: say.branch, example: 'main' }),
  pullRequest: pullRequestNumber().optional().meta({ description: say.pullRequest, example: 42 }),
});

import { h } from './dom.js';

// The code change a snapshot measured (commit, branch, pull request), as the API gives it on
// /v1/audit's cells, /v1/updates' entries and /v1/overview's records: absent when none was given.

/** A commit as people read it: its first 7 digits. */
const shortCommit = (commit) => commit.slice(0, 7);

/** "branch main · commit 3f9c2a1 · pull request #12" (`commitOf` the commit as shown), or '' without a revision. */
export function revisionText(revision, commitOf = shortCommit) {
  if (!revision) return '';
  return [
    revision.branch === undefined ? null : `branch ${revision.branch}`,
    revision.commit === undefined ? null : `commit ${commitOf(revision.commit)}`,
    revision.pullRequest === undefined ? null : `pull request #${revision.pullRequest}`,
  ]
    .filter(Boolean)
    .join(' · ');
}

/** The badge of a snapshot measured from a pull (or merge) request; null otherwise. */
function pullRequestBadge(revision) {
  if (revision?.pullRequest === undefined) return null;
  return h(
    'span',
    { class: 'badge-pr', 'data-pull-request': revision.pullRequest, title: `pull request #${revision.pullRequest}` },
    'from pull request',
  );
}

/** The revision's parts in line (the commit short, in full on hover), and the badge; null without one. */
export function revisionLine(revision, tag = 'p') {
  if (!revision) return null;
  const parts = [];
  if (revision.branch !== undefined)
    parts.push(['branch ', h('code', { 'data-branch': revision.branch }, revision.branch)]);
  if (revision.commit !== undefined)
    parts.push([
      'commit ',
      h('code', { 'data-commit': revision.commit, title: revision.commit }, shortCommit(revision.commit)),
    ]);
  if (revision.pullRequest !== undefined) parts.push([`PR #${revision.pullRequest}`]);
  const line = parts.flatMap((part, index) => (index === 0 ? part : [' · ', ...part]));
  return h(tag, { class: 'revision' }, ...line, ' ', pullRequestBadge(revision));
}

/** The revision of an audit result: every cell of one snapshot carries the same. */
export function revisionOfResult(result) {
  for (const device of ['mobile', 'desktop'])
    for (const cell of Object.values(result[device] ?? {})) if (cell.revision) return cell.revision;
  return undefined;
}

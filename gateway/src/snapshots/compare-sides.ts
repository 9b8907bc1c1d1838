import { formatApiDateTime } from '@perfwatch/common';
import {
  filtered,
  type SnapshotCells,
  type SnapshotFilter,
  type SnapshotReadsStore,
  type SnapshotSummary,
} from './store/snapshots-store.ts';

/** How a request names one side of a comparison: its snapshot's date, or the newest that fits. */
type SideDate = Date | 'latest';

/** The two sides a request names: `to` of the head project, `from` of the base (the same one, or another). */
export interface ComparedSides {
  head: { id: string };
  base: { id: string; url: string };
  from: SideDate;
  to: SideDate;
  filter: SnapshotFilter;
  /**
   * The base side's `latest` skips snapshots of any other branch too (those that name one: a
   * scheduled snapshot names none and counts as the default branch's). The forge reporter
   * gives the link's default branch; `/v1/compare` gives none.
   */
  baseBranch?: string;
}

export type FoundSides =
  { found: true; from: SnapshotCells; to: SnapshotCells } | { found: false; message: string; errors: string[] };

type SidesStore = Pick<SnapshotReadsStore, 'findSnapshotCells' | 'listSnapshots'>;

/** Snapshots read per page while walking back to the newest that fits. */
const PAGE = 100;

/**
 * Whether a snapshot was measured for a pull request: the base side's `latest` is the newest
 * that was not (what production, or the default branch, looked like). A snapshot stored
 * without a revision was not.
 */
const fromPullRequest = (snapshot: SnapshotSummary) => snapshot.revision?.pullRequest !== undefined;

/**
 * The date of a project's newest snapshot before `before` (all, if absent) that has a cell the
 * request asks for and that `skip` does not rule out; null when there is none. Walks back a page
 * at a time: the first page nearly always has it.
 */
async function newestDate(
  store: SidesStore,
  projectId: string,
  { filter, before, skip }: { filter: SnapshotFilter; before?: Date; skip?: (s: SnapshotSummary) => boolean },
): Promise<Date | null> {
  for (let page: { before?: Date; limit: number } = { before, limit: PAGE }; ;) {
    const snapshots = await store.listSnapshots(projectId, page);
    const fits = snapshots.findLast((s) => s.available.some(filtered(filter)) && !skip?.(s));
    if (fits) return fits.date;
    if (snapshots.length < PAGE) return null;
    page = { before: snapshots[0]!.date, limit: PAGE };
  }
}

/**
 * The snapshots a comparison reads, each side's `latest` resolved: `to`'s is the head project's
 * newest; `from`'s the base project's newest not from a pull request, and older than the `to`
 * snapshot when both sides are one project (so `from=latest&to=latest` compares the last two).
 * When a side has none, `errors` says which and why.
 */
export async function findSides(store: SidesStore, sides: ComparedSides): Promise<FoundSides> {
  const { head, base, filter } = sides;
  const same = head.id === base.id;
  const toDate = sides.to === 'latest' ? await newestDate(store, head.id, { filter }) : sides.to;
  const fromDate =
    sides.from === 'latest'
      ? await newestDate(store, base.id, {
          filter,
          before: same ? (toDate ?? undefined) : undefined,
          skip: (s) =>
            fromPullRequest(s) ||
            (sides.baseBranch !== undefined &&
              s.revision?.branch !== undefined &&
              s.revision.branch !== sides.baseBranch),
        })
      : sides.from;
  const [from, to] = await Promise.all([
    fromDate && store.findSnapshotCells(base.id, fromDate, filter),
    toDate && store.findSnapshotCells(head.id, toDate, filter),
  ]);
  if (from && to) return { found: true, from, to };
  const project = same ? 'the project' : `the base project (${base.url})`;
  const cells = filter.device || filter.locations?.length ? ' with a cell asked for' : '';
  const errors = [
    !from &&
      (fromDate
        ? `from: ${project} has no snapshot at ${formatApiDateTime(fromDate)}`
        : `from: ${project} has no snapshot${cells} that is not from a pull request${
            same && toDate ? `, older than to's (${formatApiDateTime(toDate)})` : ''
          }`),
    !to &&
      (toDate
        ? `to: the project has no snapshot at ${formatApiDateTime(toDate)}`
        : `to: the project has no snapshot${cells}`),
  ].filter((error): error is string => typeof error === 'string');
  const dated = sides.from !== 'latest' && sides.to !== 'latest';
  return { found: false, message: dated ? 'No snapshot at that date.' : 'No snapshot to compare.', errors };
}

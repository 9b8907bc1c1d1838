import { describe, expect, it } from 'vitest';
import type { Device, Location, Revision } from '@perfwatch/common';
import { findSides, type ComparedSides } from './compare-sides.ts';
import type { SnapshotCells, SnapshotPage, SnapshotSummary } from './store/snapshots-store.ts';

/** A store of listed snapshots per project, paged as the backends page them (newest `limit` before `before`, ascending). */
function storeOf(snapshots: Record<string, SnapshotSummary[]>) {
  const pages: string[] = [];
  return {
    pages,
    async listSnapshots(projectId: string, page?: SnapshotPage) {
      pages.push(`${projectId}<${page?.before?.toISOString().slice(11, 19) ?? 'now'}`);
      const older = (snapshots[projectId] ?? []).filter((s) => !page?.before || s.date < page.before);
      return page ? older.slice(-page.limit) : older;
    },
    async findSnapshotCells(projectId: string, date: Date): Promise<SnapshotCells | null> {
      const found = (snapshots[projectId] ?? []).find((s) => s.date.getTime() === date.getTime());
      return found
        ? {
            id: `${projectId}@${found.date.toISOString()}`,
            projectId,
            updateId: 'u',
            url: projectId,
            ...found,
            results: [],
            missing: [],
          }
        : null;
    },
  };
}

const at = (second: number) => new Date(Date.UTC(2026, 10, 26, 10, 0, second));
const snapshot = (
  second: number,
  { revision, cells = [['mobile', 'london']] }: { revision?: Revision; cells?: Array<[Device, Location]> } = {},
): SnapshotSummary => ({
  date: at(second),
  updateType: 'ci',
  available: cells.map(([device, location]) => ({ device, location })),
  ...(revision ? { revision } : {}),
});

const project = (id: string) => ({ id, url: `https://${id}.test/` });
const sides = (over: Partial<ComparedSides>): ComparedSides => ({
  head: project('head'),
  base: project('head'),
  from: 'latest',
  to: 'latest',
  filter: {},
  ...over,
});
const datesOf = async (store: ReturnType<typeof storeOf>, over: Partial<ComparedSides>) => {
  const found = await findSides(store, sides(over));
  return found.found ? [found.from.date, found.to.date] : found;
};

describe('findSides', () => {
  it('latest on both sides of one project: the last two snapshots', async () => {
    const store = storeOf({ head: [snapshot(1), snapshot(2), snapshot(3)] });
    expect(await datesOf(store, {})).toEqual([at(2), at(3)]);
    // from=latest is older than a dated `to`, too.
    expect(await datesOf(store, { to: at(2) })).toEqual([at(1), at(2)]);
  });

  it("across projects: the head's newest, the base's newest not from a pull request", async () => {
    const store = storeOf({
      head: [snapshot(1), snapshot(5, { revision: { pullRequest: 7, commit: 'abcdef0' } })],
      base: [snapshot(2, { revision: { branch: 'main' } }), snapshot(3), snapshot(9, { revision: { pullRequest: 8 } })],
    });
    expect(await datesOf(store, { base: project('base') })).toEqual([at(3), at(5)]);
    // On one project, a pull request's snapshot is never the base either.
    expect(await datesOf(store, {})).toEqual([at(1), at(5)]);
    expect(await datesOf(store, { base: project('base'), from: at(9), to: at(1) })).toEqual([at(9), at(1)]);
  });

  it("with a base branch (the forge reporter's default branch), other branches' snapshots are skipped too", async () => {
    const store = storeOf({
      head: [snapshot(8, { revision: { pullRequest: 7 } })],
      base: [
        snapshot(2, { revision: { branch: 'main' } }),
        snapshot(3),
        snapshot(4, { revision: { branch: 'release-2' } }),
      ],
    });
    expect(await datesOf(store, { base: project('base'), baseBranch: 'main' })).toEqual([at(3), at(8)]);
    expect(await datesOf(store, { base: project('base') })).toEqual([at(4), at(8)]);
  });

  it('walks back page by page past pull requests, and only to snapshots with a cell asked for', async () => {
    const many = Array.from({ length: 250 }, (_, i) =>
      snapshot(i + 10, i < 5 ? {} : { revision: { pullRequest: 1 }, cells: [['desktop', 'tokyo']] }),
    );
    const store = storeOf({ head: [snapshot(1), ...many] });
    expect(await datesOf(store, { base: project('head') })).toEqual([at(14), at(259)]);
    expect(store.pages).toEqual(['head<now', 'head<10:04:19', 'head<10:02:39', 'head<10:00:59']);
    store.pages.length = 0;
    expect(await datesOf(store, { filter: { device: 'mobile' } })).toEqual([at(13), at(14)]);
  });

  it('says which side has no snapshot, and why', async () => {
    const store = storeOf({ head: [snapshot(1)], base: [snapshot(2, { revision: { pullRequest: 3 } })] });
    expect(await findSides(store, sides({}))).toEqual({
      found: false,
      message: 'No snapshot to compare.',
      errors: [
        "from: the project has no snapshot that is not from a pull request, older than to's (2026-11-26T10:00:01)",
      ],
    });
    expect(await findSides(store, sides({ base: project('base') }))).toMatchObject({
      errors: ['from: the base project (https://base.test/) has no snapshot that is not from a pull request'],
    });
    expect(await findSides(store, sides({ base: project('base'), from: at(4), to: at(5) }))).toEqual({
      found: false,
      message: 'No snapshot at that date.',
      errors: [
        'from: the base project (https://base.test/) has no snapshot at 2026-11-26T10:00:04',
        'to: the project has no snapshot at 2026-11-26T10:00:05',
      ],
    });
    expect(await findSides(store, sides({ filter: { locations: ['tokyo'] }, from: at(1) }))).toMatchObject({
      errors: ['to: the project has no snapshot with a cell asked for'],
    });
  });
});

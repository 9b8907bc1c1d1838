import { z } from 'zod';
import type { Device, Location } from '@perfwatch/common';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import { pageRecordsOnly, type KpisStore } from '../snapshots/store/kpis-store.ts';
import type { SnapshotReadsStore } from '../snapshots/store/snapshots-store.ts';

/**
 * The KPIs of the `performance` record (common/src/lighthouse-kpis.ts) exposed per cell, in the
 * units /v1/overview gives them: score 0–100, cls unitless, the others milliseconds.
 */
export const PAGE_KPIS = ['score', 'fcp', 'lcp', 'tbt', 'cls', 'si', 'ttfb', 'tti'] as const;
type PageKpi = (typeof PAGE_KPIS)[number];

interface PageCell {
  device: Device;
  location: Location;
  kpis: Partial<Record<PageKpi, number>>;
}

interface PageSnapshot {
  /** The project's URL: what names it to its team. */
  url: string;
  date: Date;
  cells: PageCell[];
}

export interface LatestPageKpis {
  pages: PageSnapshot[];
  /** Projects with a snapshot that are not in `pages`: over the cap, or not read within the time allowed. */
  leftOut: number;
}

export type PageKpiStore = Pick<ProjectsStore, 'listProjects'> &
  Pick<SnapshotReadsStore, 'listSnapshots'> &
  Pick<KpisStore, 'streamKpis'>;

/** The `performance` record's data as stored; fields a record of KPI version 1 lacks read as absent. */
const performanceData = z.object(
  Object.fromEntries(PAGE_KPIS.map((kpi) => [kpi, z.number().nullish()])) as Record<
    PageKpi,
    z.ZodOptional<z.ZodNullable<z.ZodNumber>>
  >,
);

/** Store reads at once: enough to hide a database's round trips, few enough to leave it to the API. */
const READS_AT_ONCE = 8;

/** `work` on each item, READS_AT_ONCE at a time, until `deadline`; what was not done by then stays undone. */
async function eachUntil<T>(items: readonly T[], deadline: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && Date.now() < deadline) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: READS_AT_ONCE }, worker));
}

/**
 * Each project's latest complete snapshot's KPIs per cell (the median run's, as the overview
 * has them), read from the KPI records alone: no Lighthouse result is loaded. At most
 * `maxProjects`, the most recently measured first; reads stop at `deadline` (epoch ms).
 */
export async function readLatestPageKpis(
  store: PageKpiStore,
  { maxProjects, deadline }: { maxProjects: number; deadline: number },
): Promise<LatestPageKpis> {
  const projects = await store.listProjects();
  const latest: Array<{ project: (typeof projects)[number]; date: Date }> = [];
  let listed = 0;
  await eachUntil(projects, deadline, async (project) => {
    const [snapshot] = await store.listSnapshots(project.id, { limit: 1 });
    listed++;
    if (snapshot) latest.push({ project, date: snapshot.date });
  });
  latest.sort((a, b) => b.date.getTime() - a.date.getTime() || a.project.url.localeCompare(b.project.url));
  const chosen = latest.slice(0, maxProjects);
  const pages: PageSnapshot[] = [];
  await eachUntil(chosen, deadline, async ({ project, date }) => {
    const cells = await performanceCells(store, project, date);
    if (cells.length > 0) pages.push({ url: project.url, date, cells });
  });
  // A project the deadline kept from being listed counts as left out: it may have snapshots.
  const unlisted = projects.length - listed;
  return { pages: pages.sort((a, b) => a.url.localeCompare(b.url)), leftOut: unlisted + latest.length - pages.length };
}

/** The `performance` KPIs of each cell of one snapshot, from its KPI records. */
async function performanceCells(
  store: Pick<KpisStore, 'streamKpis'>,
  project: { userId: string; url: string; domain: string },
  date: Date,
): Promise<PageCell[]> {
  const cells: PageCell[] = [];
  const rows = store.streamKpis({
    userId: project.userId,
    from: date,
    to: new Date(date.getTime() + 1),
    domain: project.domain,
    sections: ['LIGHTHOUSE'],
  });
  // A flow's cell has a record per step: the page's are the first step's.
  const isPage = pageRecordsOnly();
  for await (const batch of rows) {
    for (const row of batch) {
      if (row.url !== project.url || row.kpi !== 'performance' || !isPage(row)) continue;
      const parsed = performanceData.safeParse(JSON.parse(row.dataJson));
      if (!parsed.success) continue;
      const kpis: Partial<Record<PageKpi, number>> = {};
      for (const kpi of PAGE_KPIS) {
        const value = parsed.data[kpi];
        if (typeof value === 'number') kpis[kpi] = value;
      }
      cells.push({ device: row.device, location: row.location, kpis });
    }
  }
  return cells;
}

import pLimit from 'p-limit';
import { z } from 'zod';
import { SITE_TREND_DAYS, type Device } from '@perfwatch/common';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import { pageRecordsOnly, type KpisStore } from '../snapshots/store/kpis-store.ts';
import type { SnapshotReadsStore } from '../snapshots/store/snapshots-store.ts';
import type { PageMeasure, ScorePoint } from './site-overview.ts';
import type { SiteRecord } from './store/sites-store.ts';

export type OverviewReadsStore = Pick<ProjectsStore, 'findProject'> &
  Pick<SnapshotReadsStore, 'listSnapshots' | 'findSnapshotCells'> &
  Pick<KpisStore, 'streamKpis'>;

const DAY_MS = 86_400_000;
/** Sampled pages whose latest snapshot one overview looks up at once. */
const PAGE_READS_AT_ONCE = 16;

/** The numbers of a `performance` KPI record the overview reads (records of KPI version 1 lack lcp, tbt, cls). */
const performanceData = z.object({
  score: z.number().nullable().catch(null),
  lcp: z.number().nullable().catch(null),
  tbt: z.number().nullable().catch(null),
  cls: z.number().nullable().catch(null),
});

/** A sampled page's latest snapshot: its date and failing checks per device. */
interface Latest {
  /** The page's URL, and its project's (the same page, perhaps written otherwise). */
  url: string;
  projectUrl: string;
  date: Date;
  failures: Map<Device, number>;
}

/**
 * A sampled page's project is the organisation's project at the page's URL (the projects a site
 * measures are made at its sampled pages' URLs); no project or no snapshot yet: nothing.
 */
async function latestOf(store: OverviewReadsStore, orgId: string, url: string): Promise<Latest | null> {
  const project = await store.findProject(orgId, url);
  if (!project) return null;
  const [newest] = await store.listSnapshots(project.id, { limit: 1 });
  if (!newest) return null;
  const cells = await store.findSnapshotCells(project.id, newest.date);
  const failures = new Map<Device, number>();
  for (const cell of cells?.results ?? []) {
    const failing = (cell.checks ?? []).filter((check) => !check.pass).length;
    failures.set(cell.device, (failures.get(cell.device) ?? 0) + failing);
  }
  return { url, projectUrl: project.url, date: newest.date, failures };
}

/**
 * What the overview of a site is computed from: each sampled page's latest snapshot's
 * performance KPI records (at the site's default location when measured there) with its budget
 * failures, and every snapshot's score of the trend's days. The KPI records are read as
 * /v1/overview reads them, for the site's host, from the oldest of the latest snapshots on.
 */
export async function readSiteMeasures(
  store: OverviewReadsStore,
  site: Pick<SiteRecord, 'userId' | 'origin' | 'defaultLocation'>,
  sampledUrls: readonly string[],
  now: Date,
): Promise<{ measures: PageMeasure[]; points: ScorePoint[] }> {
  // A few pages at a time: each is three reads, and a site may sample 1,000 pages.
  const limit = pLimit(PAGE_READS_AT_ONCE);
  const latest = (await Promise.all(sampledUrls.map((url) => limit(() => latestOf(store, site.userId, url))))).filter(
    (found): found is Latest => found !== null,
  );
  // No sampled page measured yet: no KPI record to read.
  if (latest.length === 0) return { measures: [], points: [] };
  const trendFrom = new Date(now.getTime() - SITE_TREND_DAYS * DAY_MS);
  const from = new Date(Math.min(trendFrom.getTime(), ...latest.map((l) => l.date.getTime())));
  const byUrl = new Map(latest.map((l) => [l.projectUrl, l]));
  const measures = new Map<string, PageMeasure & { atDefault: boolean }>();
  const points: ScorePoint[] = [];
  const rows = store.streamKpis({
    userId: site.userId,
    from,
    to: new Date(now.getTime() + DAY_MS),
    domain: new URL(site.origin).hostname,
    sections: ['LIGHTHOUSE'],
  });
  // A flow's cell has a performance record per step: the page's is the first step's.
  const isPage = pageRecordsOnly();
  for await (const batch of rows)
    for (const row of batch) {
      const page = byUrl.get(row.url);
      if (!page || row.kpi !== 'performance' || !isPage(row)) continue;
      const data = performanceData.safeParse(JSON.parse(row.dataJson));
      if (!data.success) continue;
      if (data.data.score !== null && row.date >= trendFrom && row.location === site.defaultLocation)
        points.push({ url: page.url, device: row.device, date: row.date, score: data.data.score });
      if (row.date.getTime() !== page.date.getTime()) continue;
      const key = `${page.url} ${row.device}`;
      const atDefault = row.location === site.defaultLocation;
      if (measures.get(key)?.atDefault) continue;
      const budgetFailures = page.failures.get(row.device) ?? 0;
      measures.set(key, { url: page.url, device: row.device, date: row.date, ...data.data, budgetFailures, atDefault });
    }
  return { measures: [...measures.values()].map(({ atDefault: _, ...m }) => m), points };
}

import { DEVICES, WORST_PAGES, type Device, type SiteOverview } from '@perfwatch/common';
import type { SitePageRecord, SiteRecord } from './store/sites-store.ts';

/** A sampled page's measure on one device, as its latest snapshot's KPI records hold it. */
export interface PageMeasure {
  url: string;
  device: Device;
  date: Date;
  score: number | null;
  lcp: number | null;
  tbt: number | null;
  cls: number | null;
  /** Failing budget checks of its snapshot's cells of this device. */
  budgetFailures: number;
}

/** One day's score of a sampled page (a snapshot's, the trend's raw point). */
export interface ScorePoint {
  url: string;
  device: Device;
  date: Date;
  score: number;
}

type Group = SiteOverview['groups'][number];
type Metric = 'score' | 'lcp' | 'tbt' | 'cls';

/** The middle value, or the mean of the two middle ones; null for none. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const medianOf = (measures: readonly PageMeasure[], metric: Metric): number | null =>
  median(measures.flatMap((m) => (m[metric] === null ? [] : [m[metric]])));

/** The last discovery: a discovery stamps every page it found as seen, and those it lost as gone, at its time. */
function discoveredAtOf(pages: readonly SitePageRecord[]): Date | null {
  let last: Date | null = null;
  for (const page of pages) for (const at of [page.lastSeenAt, page.goneAt]) if (at && (!last || at > last)) last = at;
  return last;
}

/** Daily median scores of one device's points, oldest day first. */
function dailyMedians(points: readonly ScorePoint[]): Array<{ day: string; score: number }> {
  const byDay = new Map<string, number[]>();
  for (const point of points) {
    const day = point.date.toISOString().slice(0, 10);
    byDay.set(day, [...(byDay.get(day) ?? []), point.score]);
  }
  return [...byDay.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([day, scores]) => ({ day, score: median(scores)! }));
}

function groupOf(
  name: string,
  current: readonly SitePageRecord[],
  measures: readonly PageMeasure[],
  points: readonly ScorePoint[],
  shown: readonly Device[],
): Group {
  const sampledPages = current.filter((page) => page.sampled).map((page) => page.url);
  const sampled = new Set(sampledPages);
  const own = measures.filter((m) => sampled.has(m.url));
  const devices = shown.map((device) => {
    const of = own.filter((m) => m.device === device);
    const budgetFailures = of.reduce((sum, m) => sum + m.budgetFailures, 0);
    return { device, measuredPages: of.length, ...metricsOf(of), budgetFailures };
  });
  const trend = DEVICES.map((device) => ({
    device,
    points: dailyMedians(points.filter((p) => p.device === device && sampled.has(p.url))),
  })).filter((t) => t.points.length > 0);
  return {
    group: name,
    pages: current.length,
    sampledPages,
    measured: own.length > 0,
    devices,
    budgetFailures: devices.reduce((sum, d) => sum + d.budgetFailures, 0),
    trend,
  };
}

const metricsOf = (measures: readonly PageMeasure[]) => ({
  score: medianOf(measures, 'score'),
  lcp: medianOf(measures, 'lcp'),
  tbt: medianOf(measures, 'tbt'),
  cls: medianOf(measures, 'cls'),
});

/** Lowest score first; a page without a score after those with one; then by URL and device. */
const worstFirst = (a: PageMeasure, b: PageMeasure): number =>
  (a.score ?? Infinity) - (b.score ?? Infinity) || a.url.localeCompare(b.url) || a.device.localeCompare(b.device);

/**
 * A site's overview (issue 34): per group (route template) the medians over its sampled pages'
 * latest snapshots, per device, with their budget failures and a daily trend; the pages worst
 * first; and what the last discovery added and lost. Pure: the route reads what it is given.
 */
export function siteOverview(
  site: Pick<SiteRecord, 'id' | 'origin'> & { devices?: SiteRecord['devices'] },
  pages: readonly SitePageRecord[],
  measures: readonly PageMeasure[],
  points: readonly ScorePoint[],
): SiteOverview {
  const current = pages.filter((page) => page.goneAt === null);
  const names = [...new Set(current.map((page) => page.group))].sort();
  // The devices the site measures, and any it measured before its settings changed.
  const shown = DEVICES.filter((d) => (site.devices ?? DEVICES).includes(d) || measures.some((m) => m.device === d));
  const groups = names.map((name) =>
    groupOf(
      name,
      current.filter((page) => page.group === name),
      measures,
      points,
      shown,
    ),
  );
  const groupByUrl = new Map(current.map((page) => [page.url, page.group]));
  const sampled = new Set(current.filter((page) => page.sampled).map((page) => page.url));
  const worstPages = measures
    .filter((m) => sampled.has(m.url))
    .sort(worstFirst)
    .slice(0, WORST_PAGES)
    .map(({ date, ...m }) => ({ ...m, group: groupByUrl.get(m.url)!, date: date.toISOString() }));
  const last = discoveredAtOf(pages);
  const at = last?.getTime();
  return {
    site: { id: site.id, origin: site.origin, discoveredAt: last ? last.toISOString() : null },
    groups,
    worstPages,
    added: current
      .filter((page) => page.firstSeenAt.getTime() === at)
      .map((page) => page.url)
      .sort(),
    gone: pages
      .filter((page) => page.goneAt?.getTime() === at)
      .map((page) => page.url)
      .sort(),
  };
}

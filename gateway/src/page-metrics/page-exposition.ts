import { Gauge, Registry } from 'prom-client';
import { PAGE_KPIS, type LatestPageKpis } from './latest-page-kpis.ts';

const PAGE_KPI_HELP =
  "KPIs of each project's latest snapshot (the median run per device and location), as /v1/overview has them: " +
  'kpi="score" the performance score 0-100; cls unitless; fcp, lcp, tbt, si, ttfb and tti in milliseconds.';

/**
 * The Prometheus text of page KPIs: a registry made for this one answer, so a project that
 * left the set leaves no series behind.
 */
export async function pageMetricsText(kpis: LatestPageKpis): Promise<{ contentType: string; text: string }> {
  const registry = new Registry();
  const kpi = new Gauge({
    name: 'perfwatch_page_kpi',
    help: PAGE_KPI_HELP,
    labelNames: ['project', 'device', 'location', 'kpi'],
    registers: [registry],
  });
  const taken = new Gauge({
    name: 'perfwatch_page_snapshot_timestamp_seconds',
    help: "When each project's latest snapshot was measured (its date), in Unix seconds.",
    labelNames: ['project', 'device', 'location'],
    registers: [registry],
  });
  const leftOut = new Gauge({
    name: 'perfwatch_page_projects_left_out',
    help: 'Projects with snapshots this answer leaves out: past PAGE_METRICS_MAX_PROJECTS (the least recently measured go), or not read within the time a scrape is given (those may have none).',
    registers: [registry],
  });
  const exposed = new Gauge({
    name: 'perfwatch_page_projects',
    help: 'Projects this answer has page KPIs of.',
    registers: [registry],
  });
  for (const page of kpis.pages) {
    for (const cell of page.cells) {
      const labels = { project: page.url, device: cell.device, location: cell.location };
      taken.set(labels, page.date.getTime() / 1000);
      for (const name of PAGE_KPIS) {
        const value = cell.kpis[name];
        if (value !== undefined) kpi.set({ ...labels, kpi: name }, value);
      }
    }
  }
  leftOut.set(kpis.leftOut);
  exposed.set(kpis.pages.length);
  return { contentType: registry.contentType, text: await registry.metrics() };
}

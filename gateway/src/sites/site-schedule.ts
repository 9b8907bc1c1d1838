import type { Logger } from 'pino';
import type { GatewayConfig } from '../config.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import { enqueueTick, latestTick } from '../scheduling/scheduler.ts';
import type { UpdateAdmission } from '../updates/update-admission.ts';
import { createSiteDiscoveries, type SiteDiscoveries, type SiteDiscoveriesDeps } from './site-discoveries.ts';

export type { SiteDiscoveries } from './site-discoveries.ts';
import type { SitesStore } from './store/sites-store.ts';

export interface SiteScheduleDeps {
  store: Pick<SitesStore, 'listSites' | 'markSiteScheduled' | 'listSitePages' | 'findSite'> &
    Pick<ProjectsStore, 'listProjects'>;
  discoveries: Pick<SiteDiscoveries, 'start'>;
  admission: UpdateAdmission;
  logger: Logger;
}

/**
 * Per site with a schedule, its latest tick due and not yet handled: the site is discovered
 * again, then each of its projects (its sampled pages, as the discovery left them) gets the
 * tick's scheduled update. Run by the scheduler's lease holder; the tick is marked before the
 * discovery starts (in the background: it may take minutes), and a mark another replica made
 * first wins, so a tick is discovered once. A discovery running already (a PATCH's) is followed
 * by one more, after which the updates run; a site removed meanwhile gets none.
 */
async function startDueSiteTicks(deps: SiteScheduleDeps, at: Date): Promise<void> {
  const { store, discoveries } = deps;
  for (const site of await store.listSites()) {
    const tick = latestTick(site, at);
    if (!tick || (site.scheduledThrough && tick <= site.scheduledThrough) || tick < site.createdAt) continue;
    if (!(await store.markSiteScheduled(site.id, tick))) continue;
    void discoveries.start(site, async () => {
      if (!(await store.findSite(site.userId, site.id))) return;
      // Its sampled pages only: a page a site update measured keeps its project, not a schedule.
      const sampled = new Set((await store.listSitePages(site.id)).filter((p) => p.sampled).map((p) => p.url));
      const projects = (await store.listProjects(site.userId)).filter(
        (project) => project.siteId === site.id && sampled.has(project.url),
      );
      for (const project of projects) await enqueueTick(deps.admission, deps.logger, project, tick);
    });
  }
}

/** A gateway's site discoveries, and the scheduler's pass over the sites' ticks that starts them. */
export function siteWork(
  deps: Omit<SiteScheduleDeps, 'discoveries'> &
    SiteDiscoveriesDeps & { config: Pick<GatewayConfig, 'MAX_SITE_DISCOVERIES_AT_ONCE'> },
) {
  const discoveries = createSiteDiscoveries({ ...deps, maxAtOnce: deps.config.MAX_SITE_DISCOVERIES_AT_ONCE });
  return { discoveries, tick: (at: Date) => startDueSiteTicks({ ...deps, discoveries }, at) };
}

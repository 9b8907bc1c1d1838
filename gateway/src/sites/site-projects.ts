import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import { DuplicateError } from '../store/store.ts';
import type { SiteRecord, SitesStore } from './store/sites-store.ts';

export type SiteProjectsStore = Pick<
  ProjectsStore,
  'listProjects' | 'addProject' | 'removeProject' | 'setProjectSettings'
> &
  Pick<SitesStore, 'listSitePages'>;

/** The measuring settings a site's projects take from it; no schedule: the site's drives them. */
const measuringOf = (site: SiteRecord) => ({
  locations: site.locations,
  defaultLocation: site.defaultLocation,
  runs: site.runs,
  schedule: null,
  devices: site.devices,
});

const sameMeasuring = (project: ProjectRecord, site: SiteRecord): boolean =>
  JSON.stringify([project.locations, project.defaultLocation, project.runs, project.schedule, project.devices]) ===
  JSON.stringify(Object.values(measuringOf(site)));

/**
 * Makes the site's projects its pages: a project (marked with the site's id) per sampled page
 * not yet one, settings following the site's, and the site's projects of pages gone (no longer
 * found by discovery) removed with their data. A page no longer sampled keeps its project and
 * snapshots: a site update may have measured it (all pages, or named ones), and is read back
 * like a sampled one. A project made by hand at a page's URL is the user's: it is neither taken
 * over nor removed. `sampled`: none (the site removed: every project of it goes) or the
 * pages' samples (default: the stored pages'). `removeGone` false (a discovery cut short): none
 * is removed, as pages it did not reach are not known to be gone.
 */
export async function syncSiteProjects(
  store: SiteProjectsStore,
  site: SiteRecord,
  sampled?: readonly string[],
  { removeGone = true }: { removeGone?: boolean } = {},
): Promise<{ made: number; removed: number }> {
  const pages = sampled?.length === 0 ? [] : (await store.listSitePages(site.id)).filter((p) => p.goneAt === null);
  const urls = new Set(sampled ?? pages.filter((p) => p.sampled).map((p) => p.url));
  const current = new Set([...urls, ...pages.map((p) => p.url)]);
  const projects = await store.listProjects(site.userId);
  const byUrl = new Map(projects.map((project) => [project.url, project]));
  let made = 0;
  let removed = 0;
  for (const project of removeGone ? projects : [])
    if (
      project.siteId === site.id &&
      !current.has(project.url) &&
      (await store.removeProject(site.userId, project.url))
    )
      removed++;
  for (const url of urls) {
    const project = byUrl.get(url);
    if (project === undefined) made += await addSiteProject(store, site, url);
    else if (project.siteId === site.id && !sameMeasuring(project, site))
      await store.setProjectSettings(project.id, { ...measuringOf(site), crux: project.crux });
  }
  return { made, removed };
}

/** 1 once made; 0 when the user made it by hand meanwhile (theirs stays). */
export async function addSiteProject(store: SiteProjectsStore, site: SiteRecord, url: string): Promise<number> {
  try {
    await store.addProject({
      userId: site.userId,
      url,
      domain: new URL(url).hostname,
      ...measuringOf(site),
      // None of its own: it inherits the site's and its group's when checked (site-budgets.ts).
      siteId: site.id,
    });
    return 1;
  } catch (error) {
    if (error instanceof DuplicateError) return 0;
    throw error;
  }
}

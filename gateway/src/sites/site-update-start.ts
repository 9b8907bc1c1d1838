import { randomUUID } from 'node:crypto';
import type { Device, Revision, UpdateType } from '@perfwatch/common';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import type { StartAsync } from '../updates/async-updates.ts';
import { addSiteProject, type SiteProjectsStore } from './site-projects.ts';
import type { SiteUpdatePage, SiteUpdatesStore } from './store/site-updates-store.ts';
import type { SiteRecord } from './store/sites-store.ts';

export type SiteUpdateStartStore = SiteProjectsStore &
  Pick<ProjectsStore, 'findProject'> &
  Pick<SiteUpdatesStore, 'addSiteUpdate'>;

export interface SiteUpdateStart {
  site: SiteRecord;
  urls: readonly string[];
  devices: readonly Device[];
  updateType: UpdateType;
  requestId: string;
  revision?: Revision | undefined;
}

/** The page's project: its own, or one made for it now as a page of the site (it was not sampled). */
async function projectOf(store: SiteUpdateStartStore, site: SiteRecord, url: string): Promise<ProjectRecord | null> {
  const found = await store.findProject(site.userId, url);
  if (found) return found;
  await addSiteProject(store, site, url);
  return store.findProject(site.userId, url);
}

/**
 * Starts a site update: each page's project (made when it has none) gets an ordinary async
 * update through `startAsync` — the same backlog, admission and fair waiting room as any other,
 * so a site never jumps another user's queue. A page whose update is refused (the location's
 * queue full, the backlog filled meanwhile, the queue down) is kept failed with the reason,
 * never dropped. The record is written once every page has its update, before the id is
 * answered: whoever holds the id finds it, after a restart too.
 */
export async function startSiteUpdate(
  deps: { store: SiteUpdateStartStore; startAsync: StartAsync; now?: () => Date },
  start: SiteUpdateStart,
): Promise<string> {
  const { store, startAsync } = deps;
  const { site, devices, updateType, requestId, revision } = start;
  const pages: SiteUpdatePage[] = [];
  for (const url of start.urls) {
    try {
      const project = await projectOf(store, site, url);
      if (!project) throw new Error('its project could not be made');
      const measured = devices.filter((device) => (project.devices ?? devices).includes(device));
      const updateId = await startAsync({
        project,
        devices: measured.length > 0 ? measured : devices,
        updateType,
        requestId,
        ...(revision ? { revision } : {}),
      });
      pages.push({ url, updateId, reason: null });
    } catch (error) {
      pages.push({ url, updateId: null, reason: `not queued: ${(error as Error).message}` });
    }
  }
  const id = randomUUID();
  await store.addSiteUpdate({
    id,
    userId: site.userId,
    siteId: site.id,
    origin: site.origin,
    createdAt: (deps.now ?? (() => new Date()))(),
    pages,
  });
  return id;
}

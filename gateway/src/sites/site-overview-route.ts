import type { Request, Response } from 'express';
import { API_ENDPOINTS } from '@perfwatch/common';
import type { Caller } from '../http/auth.ts';
import { parseRequest } from '../http/parse-request.ts';
import { siteOfPath } from './site-of-path.ts';
import { siteOverview } from './site-overview.ts';
import { readSiteMeasures, type OverviewReadsStore } from './site-overview-reads.ts';
import type { SitePageRecord, SitesStore } from './store/sites-store.ts';

type SiteOverviewStore = Pick<SitesStore, 'findSite' | 'listSitePages'> & OverviewReadsStore;

/**
 * `GET|POST /v1/sites/{id}/overview` (issue 34): a site's groups with the medians of their
 * sampled pages' latest snapshots, budget failures and trends, its worst pages, and what its last
 * discovery added and lost. Another organisation's site is as absent as one nobody has.
 */
export function siteOverviewRoute({ store, now = () => new Date() }: { store: SiteOverviewStore; now?: () => Date }) {
  return async (req: Request, res: Response): Promise<void> => {
    parseRequest(req, API_ENDPOINTS.siteOverview);
    const { site, caller } = await siteOfPath(req, API_ENDPOINTS.siteOverview.params, store);
    const pages = pagesSeenBy(caller, await store.listSitePages(site.id));
    const sampled = pages.filter((page) => page.sampled && page.goneAt === null).map((page) => page.url);
    const { measures, points } = await readSiteMeasures(store, site, sampled, now());
    res.json(siteOverview(site, pages, measures, points));
  };
}

/**
 * The pages a caller reads of a site: a `ci` token only those among its projects, so its
 * overview is that of its own pages (groups' medians, worst pages, added and gone over them
 * alone) and says nothing of the site's others, not even how many there are.
 */
const pagesSeenBy = (caller: Pick<Caller, 'projects'>, pages: SitePageRecord[]): SitePageRecord[] => {
  if (caller.projects === null) return pages;
  const listed = new Set(caller.projects);
  return pages.filter((page) => listed.has(page.url));
};

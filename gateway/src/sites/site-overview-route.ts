import type { Request, Response } from 'express';
import { API_ENDPOINTS } from '@perfwatch/common';
import { parseRequest } from '../http/parse-request.ts';
import { siteOfPath } from './site-of-path.ts';
import { siteOverview } from './site-overview.ts';
import { readSiteMeasures, type OverviewReadsStore } from './site-overview-reads.ts';
import type { SitesStore } from './store/sites-store.ts';

type SiteOverviewStore = Pick<SitesStore, 'findSite' | 'listSitePages'> & OverviewReadsStore;

/**
 * `GET|POST /v1/sites/{id}/overview` (issue 34): a site's groups with the medians of their
 * sampled pages' latest snapshots, budget failures and trends, its worst pages, and what its last
 * discovery added and lost. Another organisation's site is as absent as one nobody has.
 */
export function siteOverviewRoute({ store, now = () => new Date() }: { store: SiteOverviewStore; now?: () => Date }) {
  return async (req: Request, res: Response): Promise<void> => {
    parseRequest(req, API_ENDPOINTS.siteOverview);
    const { site } = await siteOfPath(req, API_ENDPOINTS.siteOverview.params, store);
    const pages = await store.listSitePages(site.id);
    const sampled = pages.filter((page) => page.sampled && page.goneAt === null).map((page) => page.url);
    const { measures, points } = await readSiteMeasures(store, site, sampled, now());
    res.json(siteOverview(site, pages, measures, points));
  };
}

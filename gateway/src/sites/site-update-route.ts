import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, revisionOf, type SiteUpdateAnswer } from '@perfwatch/common';
import { parseRequest } from '../http/parse-request.ts';
import type { StartAsync } from '../updates/async-updates.ts';
import type { UpdatesStore } from '../updates/store/updates-store.ts';
import { siteOfPath } from './site-of-path.ts';
import { pagesToMeasure, planOf, refuseOutOfScope, refuseOverLimit } from './site-update-plan.ts';
import { startSiteUpdate, type SiteUpdateStartStore } from './site-update-start.ts';
import type { SitesStore } from './store/sites-store.ts';

export type SiteUpdateRouteStore = SiteUpdateStartStore &
  Pick<SitesStore, 'findSite' | 'listSitePages'> &
  Pick<UpdatesStore, 'userBacklog'>;

/**
 * `GET|POST /v1/sites/{id}/update` (issue 34): one async update of many pages of a site. The
 * plan (pages × devices × locations × runs) is answered first; past the caller's limit of runs
 * waiting it is refused whole (429, nothing queued); `planOnly` queues nothing either.
 * `queuedRunsPerUser`: that limit (MAX_QUEUED_RUNS_PER_USER).
 */
export function siteUpdateRoute({
  store,
  startAsync,
  queuedRunsPerUser,
}: {
  store: SiteUpdateRouteStore;
  startAsync: StartAsync;
  queuedRunsPerUser: number;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const request = parseRequest(req, API_ENDPOINTS.siteUpdate);
    const { site, caller } = await siteOfPath(req, API_ENDPOINTS.siteUpdate.params, store);
    // Scope before the site's pages: a ci token learns nothing of a page it does not list (not even whether it is one).
    refuseOutOfScope(caller, request.pages ?? []);
    const urls = pagesToMeasure(await store.listSitePages(site.id), request);
    refuseOutOfScope(caller, urls);
    const backlog = await store.userBacklog(site.userId);
    const plan = planOf(site, urls.length, request.devices, { runs: backlog.runs, limit: queuedRunsPerUser });
    if (request.planOnly) {
      res.json({ ok: 1, id: null, plan } satisfies SiteUpdateAnswer);
      return;
    }
    // A gate that measured nothing would pass: refused, not answered done.
    if (urls.length === 0)
      throw new ApiError('BAD_REQUEST', 'The site has no pages to measure.', [
        'pages: none; its discovery has found no pages yet (see lastDiscovery in /v1/sites)',
      ]);
    refuseOverLimit(plan);
    const revision = revisionOf(request);
    const id = await startSiteUpdate(
      { store, startAsync },
      {
        site,
        urls,
        devices: plan.devices,
        updateType: request.updateType,
        requestId: req.requestId,
        ...(revision ? { revision } : {}),
      },
    );
    res.json({ ok: 1, id, plan } satisfies SiteUpdateAnswer);
  };
}

import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, formatApiDateTime, type UpdateStatusView } from '@perfwatch/common';
import { parseRequest } from '../http/parse-request.ts';
import type { UpdatesStore } from './store/updates-store.ts';
import { callerSees } from '../accounts/caller-project.ts';
import { revisionMember } from '../store/stored-revision.ts';
import { siteUpdateStatus, type SiteUpdateStatusStore } from '../sites/site-update-status.ts';
import type { SiteUpdatesStore } from '../sites/store/site-updates-store.ts';

/**
 * `GET|POST /v1/updates/{id}`: the state of one of the caller's async or scheduled updates.
 * Another user's update is reported exactly like one that does not exist. A site update's id
 * (issue 34) answers its pages' progress instead.
 */
export function updateStatusRoute({
  store,
}: {
  store: Pick<UpdatesStore, 'findUpdate'> & SiteUpdateStatusStore & Pick<SiteUpdatesStore, 'findSiteUpdate'>;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    parseRequest(req, API_ENDPOINTS.updateStatus);
    const params = API_ENDPOINTS.updateStatus.params.safeParse(req.params);
    if (!params.success)
      throw new ApiError(
        'BAD_REQUEST',
        'The request has invalid parameters.',
        params.error.issues.map((issue) => issue.message),
      );
    const caller = req.caller;
    const found = caller ? await store.findUpdate(caller.orgId, params.data.id) : null;
    // A `ci` token's update of a project it does not list is as absent as another organisation's.
    const update = found && callerSees(caller!, found.url) ? found : null;
    if (!update && caller) {
      const site = await store.findSiteUpdate(caller.orgId, params.data.id);
      // A ci token sees a site update whose every page is one of its projects, as it could start it.
      if (site && site.pages.every((page) => callerSees(caller, page.url))) {
        res.json(await siteUpdateStatus(store, site));
        return;
      }
    }
    if (!update)
      throw new ApiError('NOT_FOUND', 'Update not found.', [`id: no update of yours has the id ${params.data.id}`]);
    const view: UpdateStatusView = {
      id: update.id,
      url: update.url,
      status: update.status,
      updateType: update.updateType,
      devices: update.devices,
      locations: update.locations,
      date: update.date ? formatApiDateTime(update.date) : null,
      reason: update.reason,
      attempts: update.attempts,
      progress: update.progress,
      missing: update.missing,
      createdAt: update.createdAt.toISOString(),
      updatedAt: update.updatedAt.toISOString(),
      ...revisionMember(update.revision),
    };
    res.json(view);
  };
}

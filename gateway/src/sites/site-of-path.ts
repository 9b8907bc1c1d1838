import type { Request } from 'express';
import { ApiError } from '@perfwatch/common';
import type { Caller } from '../http/auth.ts';
import { callerSeesSite } from './sites-route.ts';
import type { SiteRecord, SitesStore } from './store/sites-store.ts';

/** The `{id}` of a site's path, as an endpoint's params schema reads it. */
interface SitePathParams {
  safeParse(
    params: unknown,
  ): { success: true; data: { id: string } } | { success: false; error: { issues: { message: string }[] } };
}

/**
 * The site a `/v1/sites/{id}/…` path names, if the caller may see it: 400 for an id that is no
 * site id, 404 for a site of another organisation (or outside a ci token's projects) as for one
 * nobody has, so an id tells a stranger nothing.
 */
export async function siteOfPath(
  req: Request,
  params: SitePathParams,
  store: Pick<SitesStore, 'findSite'>,
): Promise<{ site: SiteRecord; caller: Caller }> {
  const parsed = params.safeParse(req.params);
  if (!parsed.success)
    throw new ApiError(
      'BAD_REQUEST',
      'The request has invalid parameters.',
      parsed.error.issues.map((issue) => issue.message),
    );
  const caller = req.caller!;
  const found = await store.findSite(caller.orgId, parsed.data.id);
  if (!found || !callerSeesSite(caller, found.origin))
    throw new ApiError('NOT_FOUND', 'Site not found.', [
      `id: no site of your organisation has the id ${parsed.data.id}`,
    ]);
  return { site: found, caller };
}

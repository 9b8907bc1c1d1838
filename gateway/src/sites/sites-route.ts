import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, type ApiAnswer, type SitesParams, type SiteView } from '@perfwatch/common';
import type { AuditLog, AuditRecord } from '../audit-log/audit-log.ts';
import { settingDetails } from '../audit-log/audit-details.ts';
import type { Caller } from '../http/auth.ts';
import { parseRequest } from '../http/parse-request.ts';
import { measuredDevices } from '../projects/project-settings.ts';
import { DuplicateError } from '../store/store.ts';
import { changedSiteBudgets, changedSiteSettings, siteSettings, SiteSettingsError } from './site-settings.ts';
import type { SiteDiscoveries } from './site-discoveries.ts';
import { pendingDiscovery } from './site-discovery-run.ts';
import { syncSiteProjects, type SiteProjectsStore } from './site-projects.ts';
import type { SiteRecord, SitesStore } from './store/sites-store.ts';

type SitesRouteStore = Pick<
  SitesStore,
  'listSites' | 'addSite' | 'findSite' | 'setSiteSettings' | 'setSiteBudgets' | 'removeSite' | 'setSiteDiscovery'
> &
  SiteProjectsStore;

/** A site as the API shows it: its dates in ISO 8601, the devices it is measured on. */
const siteViewOf = (site: SiteRecord): SiteView => ({
  id: site.id,
  origin: site.origin,
  sitemap: site.sitemap,
  include: site.include,
  exclude: site.exclude,
  maxPages: site.maxPages,
  sampleSize: site.sampleSize,
  groupPatterns: site.groupPatterns,
  devices: [...measuredDevices(site)],
  locations: site.locations,
  defaultLocation: site.defaultLocation,
  runs: site.runs,
  schedule: site.schedule,
  budgets: site.budgets,
  groupBudgets: site.groupBudgets,
  createdAt: site.createdAt.toISOString(),
  lastDiscovery: site.lastDiscovery,
});

/**
 * A site as a `ci` token sees it: what its pages are measured with and held to, without what
 * tells of the site's other pages (its path patterns, its groups' budgets, its last discovery's
 * counts): a ci token reads its projects and nothing else.
 */
function ciViewOf(site: SiteRecord): SiteView {
  const {
    include: _i,
    exclude: _e,
    groupPatterns: _g,
    groupBudgets: _b,
    lastDiscovery: _d,
    ...seen
  } = siteViewOf(site);
  return seen;
}

/** Whether the caller sees the site: a `ci` token only the sites of the projects it lists. */
export const callerSeesSite = (caller: Pick<Caller, 'projects'>, origin: string): boolean =>
  caller.projects === null || caller.projects.some((url) => URL.parse(url)?.origin === origin);

/**
 * `/v1/sites` (issue 34): the organisation's sites by origin (GET); a new one (POST), a change of
 * its settings (PATCH, by id), its removal with its pages (DELETE ?id=). Discovery, grouping and
 * measuring read the stored site: a change here is what their next run follows. A new site, and
 * a PATCH with `discover: true`, start a discovery in the background (the answer does not wait;
 * the site's `lastDiscovery` says how it went); a removed site's projects go with it.
 */
export function sitesRoute({
  store,
  audit,
  discoveries,
  maxSites,
}: {
  store: SitesRouteStore;
  audit: AuditLog;
  /** Sites one organisation may have (MAX_SITES_PER_ORG). */
  maxSites: number;
  discoveries: Pick<SiteDiscoveries, 'start' | 'cancel'>;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params: SitesParams = parseRequest(req, API_ENDPOINTS.sites);
    const caller = req.caller!;
    if (params.action === 'list') {
      const sites = await store.listSites(caller.orgId);
      const viewOf = caller.projects === null ? siteViewOf : ciViewOf;
      res.json({ sites: sites.filter((site) => callerSeesSite(caller, site.origin)).map(viewOf) });
      return;
    }
    if (params.action === 'create') await refuseOverSiteLimit(store, caller.orgId, maxSites);
    const { answer, entry, discover } = await changeSites(store, caller.orgId, params, discoveries);
    await audit.record(caller, entry);
    // Started once the change is recorded; a read right after the answer sees it pending.
    if (discover) void discoveries.start(discover);
    res.json(answer);
  };
}

type Change = Exclude<SitesParams, { action: 'list' }>;

async function changeSites(
  store: SitesRouteStore,
  orgId: string,
  params: Change,
  discoveries: Pick<SiteDiscoveries, 'cancel'>,
): Promise<{ answer: ApiAnswer<'sites'>; entry: AuditRecord; discover?: SiteRecord }> {
  if (params.action === 'create') {
    const settings = checked(() => siteSettings(params.origin, params.settings));
    let site: SiteRecord;
    try {
      site = await store.addSite({ userId: orgId, origin: params.origin, ...settings });
    } catch (error) {
      if (!(error instanceof DuplicateError)) throw error;
      throw new ApiError('CONFLICT', 'The organisation already has a site at that origin.', [
        `origin: ${params.origin} exists`,
      ]);
    }
    const entry = { action: 'site.created', target: site.origin, details: settingDetails(params.settings) } as const;
    const pending = await markPending(store, site);
    return { answer: { site: siteViewOf(pending), created: true }, entry, discover: pending };
  }
  const site = await store.findSite(orgId, params.id);
  if (!site) throw notFound(params.id);
  if (params.action === 'remove') {
    // Ended first (it writes nothing then): a discovery finishing after the removal would bring its pages back.
    await discoveries.cancel(site.id);
    if (!(await store.removeSite(orgId, site.id))) throw notFound(params.id);
    await syncSiteProjects(store, site, []);
    const entry = { action: 'site.removed', target: site.origin, details: { id: site.id } } as const;
    return { answer: { id: site.id, removed: true }, entry };
  }
  return changeSite(store, site, params);
}

/** A PATCH: the site's settings and budgets given replaced; its discovery started again when asked. */
async function changeSite(
  store: SitesRouteStore,
  site: SiteRecord,
  params: Extract<Change, { action: 'change' }>,
): Promise<{ answer: ApiAnswer<'sites'>; entry: AuditRecord; discover?: SiteRecord }> {
  const settings = checked(() => changedSiteSettings(site, params.changes));
  await store.setSiteSettings(site.id, settings);
  const budgets = changedSiteBudgets(site, params.budgets);
  if (budgets) await store.setSiteBudgets(site.id, budgets);
  const entry = {
    action: 'site.changed',
    target: site.origin,
    details: { id: site.id, ...settingDetails(params.changes), ...settingDetails(params.budgets) },
  } as const;
  const now = { ...site, ...settings, ...budgets };
  const changed = params.discover ? await markPending(store, now) : now;
  return {
    answer: { site: siteViewOf(changed), created: false },
    entry,
    ...(params.discover ? { discover: changed } : {}),
  };
}

/** The site with its discovery stored as pending (the discovery then runs in the background). */
async function markPending(store: SitesRouteStore, site: SiteRecord): Promise<SiteRecord> {
  const lastDiscovery = pendingDiscovery(new Date());
  await store.setSiteDiscovery(site.id, lastDiscovery);
  return { ...site, lastDiscovery };
}

/**
 * 400 once the organisation has as many sites as one may (as a user's webhooks past theirs):
 * each site may hold 1,000 pages with their projects and discoveries. Counted before the add,
 * so two creations at once may both pass it, by one: a bound on what editors make, not a quota.
 */
async function refuseOverSiteLimit(store: SitesRouteStore, orgId: string, maxSites: number): Promise<void> {
  const held = (await store.listSites(orgId)).length;
  if (held >= maxSites)
    throw new ApiError('BAD_REQUEST', 'Too many sites.', [
      `origin: the organisation has ${held} sites, as many as it may (the gateway's MAX_SITES_PER_ORG is ${maxSites}); remove one first`,
    ]);
}

/** Another organisation's site is as absent as one nobody has. */
const notFound = (id: string) =>
  new ApiError('NOT_FOUND', 'Site not found.', [`id: no site of your organisation has the id ${id}`]);

/** The rules' refusal as a 400 naming the field. */
function checked<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof SiteSettingsError)) throw error;
    throw new ApiError('BAD_REQUEST', 'The request has invalid parameters.', [`${error.field}: ${error.message}`]);
  }
}

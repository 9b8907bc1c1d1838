import { ApiError, DEVICES, type Device, type SiteUpdatePlan, type SiteUpdateRequest } from '@perfwatch/common';
import type { Caller } from '../http/auth.ts';
import { UpdateRefused } from '../updates/update-refused.ts';
import type { SitePageRecord, SiteRecord } from './store/sites-store.ts';

/**
 * The pages a site update measures: those named (each must be a current page of the site: the
 * request is refused naming the others), every current page (`all`), or the sampled ones.
 */
export function pagesToMeasure(pages: readonly SitePageRecord[], request: SiteUpdateRequest): string[] {
  const current = pages.filter((page) => page.goneAt === null);
  if (request.all) return current.map((page) => page.url);
  if (request.pages === undefined) return current.filter((page) => page.sampled).map((page) => page.url);
  const known = new Set(current.map((page) => page.url));
  const unknown = request.pages.filter((url) => !known.has(url));
  if (unknown.length > 0)
    throw new ApiError(
      'BAD_REQUEST',
      'The request names pages that are not pages of the site.',
      unknown.slice(0, 20).map((url) => `pages: ${url} is not a current page of the site (see its last discovery)`),
    );
  return [...new Set(request.pages)];
}

/**
 * A `ci` token runs a site update only of pages that are all among its projects: it measures
 * nothing its scope does not name. The refusal counts the others and never names them: a URL it
 * does not list is no business of its (nor whether it is a page of the site).
 */
export function refuseOutOfScope(caller: Pick<Caller, 'projects'>, urls: readonly string[]): void {
  if (caller.projects === null) return;
  const listed = new Set(caller.projects);
  const outside = new Set(urls.filter((url) => !listed.has(url))).size;
  if (outside > 0)
    throw new ApiError('FORBIDDEN', 'Not allowed.', [
      `a ci token runs a site update of its own projects only; ${outside} of the pages it would measure ${outside === 1 ? 'is' : 'are'} not among them`,
    ]);
}

/** What the update costs: pages × devices × locations × runs, beside the caller's backlog and limit. */
export function planOf(
  site: Pick<SiteRecord, 'devices' | 'locations' | 'runs'>,
  pages: number,
  devices: readonly Device[] | undefined,
  backlog: { runs: number; limit: number },
): SiteUpdatePlan {
  const measured = devices ?? site.devices ?? [...DEVICES];
  return {
    pages,
    devices: [...new Set(measured)],
    locations: [...site.locations],
    runs: site.runs,
    audits: pages * new Set(measured).size * site.locations.length * site.runs,
    queuedRuns: backlog.runs,
    limit: backlog.limit,
  };
}

/** 429 BACKLOG_FULL with the plan's numbers when the caller's waiting runs and this update pass the limit. */
export function refuseOverLimit(plan: SiteUpdatePlan): void {
  if (plan.queuedRuns + plan.audits <= plan.limit) return;
  throw new UpdateRefused(
    'BACKLOG_FULL',
    'This site update would pass your limit of runs waiting: nothing was queued.',
    [
      `BACKLOG_FULL: ${plan.pages} pages × ${plan.devices.length} devices × ${plan.locations.length} locations × ${plan.runs} runs = ${plan.audits} audits`,
      `queuedRuns: ${plan.queuedRuns} runs of yours already wait; ${plan.queuedRuns} + ${plan.audits} is more than the limit`,
      `limit: ${plan.limit} runs per user (queuedRunsPerUser)`,
    ],
  );
}

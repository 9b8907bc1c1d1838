import type { TargetGuard } from '@perfwatch/common';
import type { DiscoveryBounds } from './discovery/discovery-bounds.ts';
import { discoverPages } from './discovery/discover-pages.ts';
import { groupPages } from './page-groups.ts';
import { syncSiteProjects, type SiteProjectsStore } from './site-projects.ts';
import type { SiteDiscoveryState, SiteRecord, SitesStore } from './store/sites-store.ts';

export type SiteDiscoveryStore = SiteProjectsStore &
  Pick<SitesStore, 'replaceSitePages' | 'setSiteDiscovery' | 'findSite'>;

export interface SiteDiscoveryDeps {
  store: SiteDiscoveryStore;
  /** The audits' target guard (PERFWATCH_ALLOW_TARGETS). */
  guard: TargetGuard;
  bounds?: Partial<DiscoveryBounds>;
  /** Ends the discovery early, writing nothing (the gateway stopping, the site removed). */
  signal?: AbortSignal;
  now?: () => Date;
}

/** What one discovery of a site changed. */
export interface SiteDiscoveryOutcome {
  added: string[];
  gone: string[];
  groups: number;
  /** The refusals kept (the first 100) and how many there were. */
  refused: Array<{ url: string; reason: string }>;
  refusedTotal: number;
  cut: Array<{ bound: string; reason: string }>;
  /** Nothing cut it and every robots.txt and sitemap answered: pages it did not find are gone. */
  complete: boolean;
}

/**
 * One discovery of a site: its pages found through the target guard, grouped and sampled by its
 * settings, stored (added and gone), and its projects made the sampled pages (site-projects.ts).
 * Only a complete discovery marks the pages it did not find gone (and removes their projects
 * with their snapshots): one cut short (a bound, the time, a sitemap that failed) may simply not
 * have reached them, so it adds and refreshes what it found and keeps the rest. A discovery that
 * finds nothing at all leaves the stored pages as they were: a site down for a moment keeps its
 * history. null: nothing written, as it was ended (`signal`) or its site removed meanwhile.
 */
export async function runSiteDiscovery(
  site: SiteRecord,
  deps: SiteDiscoveryDeps,
): Promise<SiteDiscoveryOutcome | null> {
  const now = deps.now ?? (() => new Date());
  const { origin, sitemap, include, exclude, maxPages } = site;
  const found = await discoverPages(
    { origin, sitemap, include, exclude, maxPages },
    {
      guard: deps.guard,
      ...(deps.bounds ? { bounds: deps.bounds } : {}),
      ...(deps.signal ? { signal: deps.signal } : {}),
    },
  );
  const { refused, refusedTotal, cut } = found;
  const complete = cut.length === 0 && found.unread === 0;
  const outcome = { added: [], gone: [], groups: 0, refused, refusedTotal, cut, complete };
  // Checked last, right before writing: a site removed meanwhile must not get its pages back.
  if (deps.signal?.aborted || !(await deps.store.findSite(site.userId, site.id))) return null;
  const urls = complete ? found.pages : await keptPages(deps.store, site, found.pages);
  if (urls.length === 0) return outcome;
  const groups = groupPages({
    siteId: site.id,
    urls,
    patterns: site.groupPatterns,
    sampleSize: site.sampleSize,
  });
  const pages = groups.flatMap(({ name, urls, sample }) => {
    const sampled = new Set(sample);
    return urls.map((url) => ({ url, group: name, sampled: sampled.has(url) }));
  });
  const change = await deps.store.replaceSitePages(site.id, pages, now(), { complete });
  const samples = groups.flatMap((group) => group.sample);
  await syncSiteProjects(deps.store, site, samples, { removeGone: complete });
  return { ...outcome, ...change, groups: groups.length };
}

/**
 * What an incomplete discovery stores of the pages it found: those already current, and new ones
 * while the site's current pages stay within its maxPages. As it marks none gone, a site that
 * breaks its own discoveries (a sitemap always 503) while listing fresh URLs each time would
 * otherwise pile them up.
 */
async function keptPages(store: SiteDiscoveryStore, site: SiteRecord, found: string[]): Promise<string[]> {
  const current = new Set((await store.listSitePages(site.id)).filter((p) => p.goneAt === null).map((p) => p.url));
  let room = site.maxPages - current.size;
  return found.filter((url) => current.has(url) || room-- > 0);
}

/** A discovery started at `at`, its outcome to come. */
export const pendingDiscovery = (at: Date): SiteDiscoveryState => ({
  at: at.toISOString(),
  state: 'pending',
  added: 0,
  gone: 0,
  refused: 0,
  cut: [],
  complete: false,
  reason: null,
});

/** The state a site keeps of a discovery's outcome, or of why it failed. */
export function discoveryState(at: Date, outcome: SiteDiscoveryOutcome | { failed: string }): SiteDiscoveryState {
  if ('failed' in outcome) return { ...pendingDiscovery(at), state: 'failed', reason: outcome.failed };
  const { added, gone, refusedTotal, cut, complete } = outcome;
  const failed = added.length === 0 && outcome.groups === 0;
  return {
    at: at.toISOString(),
    state: failed ? 'failed' : 'done',
    added: added.length,
    gone: gone.length,
    refused: refusedTotal,
    cut: cut.map(({ bound }) => bound),
    complete: complete && !failed,
    reason: failed ? (outcome.refused[0]?.reason ?? 'no page of the site was found') : null,
  };
}

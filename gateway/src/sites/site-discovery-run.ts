import type { TargetGuard } from '@perfwatch/common';
import type { DiscoveryBounds } from './discovery/discovery-bounds.ts';
import { discoverPages } from './discovery/discover-pages.ts';
import { groupPages } from './page-groups.ts';
import { syncSiteProjects, type SiteProjectsStore } from './site-projects.ts';
import type { SiteDiscoveryState, SiteRecord, SitesStore } from './store/sites-store.ts';

export type SiteDiscoveryStore = SiteProjectsStore & Pick<SitesStore, 'replaceSitePages' | 'setSiteDiscovery'>;

export interface SiteDiscoveryDeps {
  store: SiteDiscoveryStore;
  /** The audits' target guard (PERFWATCH_ALLOW_TARGETS). */
  guard: TargetGuard;
  bounds?: Partial<DiscoveryBounds>;
  /** Ends the discovery early (the gateway stopping). */
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
}

/**
 * One discovery of a site: its pages found through the target guard, grouped and sampled by its
 * settings, stored (added and gone), and its projects made the sampled pages (site-projects.ts).
 * A discovery that finds nothing at all (every request refused) leaves the stored pages as
 * they were: a site that is down for a moment does not lose its history.
 */
export async function runSiteDiscovery(site: SiteRecord, deps: SiteDiscoveryDeps): Promise<SiteDiscoveryOutcome> {
  const now = deps.now ?? (() => new Date());
  const found = await discoverPages(
    {
      origin: site.origin,
      sitemap: site.sitemap,
      include: site.include,
      exclude: site.exclude,
      maxPages: site.maxPages,
    },
    {
      guard: deps.guard,
      ...(deps.bounds ? { bounds: deps.bounds } : {}),
      ...(deps.signal ? { signal: deps.signal } : {}),
    },
  );
  const { refused, refusedTotal, cut } = found;
  if (found.pages.length === 0) return { added: [], gone: [], groups: 0, refused, refusedTotal, cut };
  const groups = groupPages({
    siteId: site.id,
    urls: found.pages,
    patterns: site.groupPatterns,
    sampleSize: site.sampleSize,
  });
  const pages = groups.flatMap(({ name, urls, sample }) => {
    const sampled = new Set(sample);
    return urls.map((url) => ({ url, group: name, sampled: sampled.has(url) }));
  });
  const change = await deps.store.replaceSitePages(site.id, pages, now());
  await syncSiteProjects(
    deps.store,
    site,
    groups.flatMap((group) => group.sample),
  );
  return { ...change, groups: groups.length, refused, refusedTotal, cut };
}

/** A discovery started at `at`, its outcome to come. */
export const pendingDiscovery = (at: Date): SiteDiscoveryState => ({
  at: at.toISOString(),
  state: 'pending',
  added: 0,
  gone: 0,
  refused: 0,
  cut: [],
  reason: null,
});

/** The state a site keeps of a discovery's outcome, or of why it failed. */
export function discoveryState(at: Date, outcome: SiteDiscoveryOutcome | { failed: string }): SiteDiscoveryState {
  if ('failed' in outcome)
    return { at: at.toISOString(), state: 'failed', added: 0, gone: 0, refused: 0, cut: [], reason: outcome.failed };
  const { added, gone, refusedTotal, cut } = outcome;
  const failed = added.length === 0 && outcome.groups === 0;
  return {
    at: at.toISOString(),
    state: failed ? 'failed' : 'done',
    added: added.length,
    gone: gone.length,
    refused: refusedTotal,
    cut: cut.map(({ bound }) => bound),
    reason: failed ? (outcome.refused[0]?.reason ?? 'no page of the site was found') : null,
  };
}

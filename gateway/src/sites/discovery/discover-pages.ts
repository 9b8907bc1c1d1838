import { z } from 'zod';
import type { TargetGuard } from '@perfwatch/common';
import { DISCOVERY_BOUNDS, type DiscoveryBounds } from './discovery-bounds.ts';
import { timeRefusal, type DiscoveryContext } from './discovery-context.ts';
import { Findings, type DiscoveryResult } from './findings.ts';
import { createGuardedFetcher } from './guarded-fetch.ts';
import { crawlLinks } from './link-crawl.ts';
import { compilePatterns, isPathPattern } from './page-filter.ts';
import { readRobots } from './robots-rules.ts';
import { walkSitemaps } from './sitemap-walk.ts';

const httpUrl = z.url({ protocol: /^https?$/ });
const pathPattern = z.string().max(500).refine(isPathPattern, 'a URL path pattern (URLPattern syntax: /product/*)');

/** What a discovery is asked: the site's own settings. */
const discoveryRequestSchema = z.object({
  /** scheme://host[:port]; only pages of this origin are kept. */
  origin: httpUrl.refine((url) => new URL(url).origin === url.replace(/\/$/, ''), 'an origin, no path'),
  /** 'discover': robots.txt's `Sitemap:` lines, else /sitemap.xml; or the sitemap's URL. */
  sitemap: z.union([z.literal('discover'), httpUrl]),
  include: z.array(pathPattern).max(100).default([]),
  exclude: z.array(pathPattern).max(100).default([]),
  maxPages: z.number().int().min(1).max(DISCOVERY_BOUNDS.maxPages),
});
export type DiscoveryRequest = z.input<typeof discoveryRequestSchema>;

export interface DiscoveryDeps {
  /** The audits' target guard (PERFWATCH_ALLOW_TARGETS): every request and redirect hop passes it. */
  guard: TargetGuard;
  /** Tighter bounds than DISCOVERY_BOUNDS (tests, a caller's own budget). */
  bounds?: Partial<DiscoveryBounds>;
  /** Ends it early, as the time budget would (the gateway stopping). */
  signal?: AbortSignal;
}

/**
 * The pages of a site: from its sitemaps (robots.txt's `Sitemap:` lines, else /sitemap.xml, or
 * the sitemap it names), else from a link crawl of its origin; each within the bounds of
 * discovery-bounds.ts, with what was refused and where a bound cut it.
 */
export async function discoverPages(request: DiscoveryRequest, deps: DiscoveryDeps): Promise<DiscoveryResult> {
  const started = performance.now();
  const asked = discoveryRequestSchema.parse(request);
  const bounds = { ...DISCOVERY_BOUNDS, ...deps.bounds };
  const origin = new URL(asked.origin).origin;
  const timeout = AbortSignal.timeout(bounds.timeBudgetMs);
  const signal = deps.signal ? AbortSignal.any([timeout, deps.signal]) : timeout;
  const findings = new Findings(bounds.refusalsKept);
  const onTime = (url: string) => timeRefusal({ bounds }, url);
  const fetcher = createGuardedFetcher({ guard: deps.guard, signal, maxRedirects: bounds.maxRedirects, onTime });
  const rules = {
    origin,
    include: compilePatterns(asked.include),
    exclude: compilePatterns(asked.exclude),
    robots: null,
  };
  const ctx: DiscoveryContext = { origin, maxPages: asked.maxPages, bounds, fetcher, rules, findings, signal };
  let source: DiscoveryResult['source'] = 'sitemap';
  try {
    const robots = await readRobots(ctx);
    ctx.rules = { ...rules, robots: robots.robots };
    const named =
      asked.sitemap !== 'discover' ? [asked.sitemap] : robots.sitemaps.length > 0 ? robots.sitemaps : ['/sitemap.xml'];
    await walkSitemaps(
      ctx,
      named.filter((url) => URL.canParse(url, origin)).map((url) => new URL(url, origin)),
    );
    // No sitemap, or none listing a page of the origin: the site's links are what is left.
    if (findings.pages.size === 0 && !findings.done) {
      source = 'crawl';
      await crawlLinks(ctx);
    }
  } finally {
    await fetcher.close();
  }
  return findings.result(source, performance.now() - started);
}

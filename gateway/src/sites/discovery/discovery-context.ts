import { Refused, type DiscoveryBounds } from './discovery-bounds.ts';
import type { Findings } from './findings.ts';
import type { GuardedFetcher } from './guarded-fetch.ts';
import type { PageRules } from './page-filter.ts';

/** What every step of one discovery shares: the site, its bounds, the fetch and the tally. */
export interface DiscoveryContext {
  origin: string;
  maxPages: number;
  bounds: DiscoveryBounds;
  fetcher: GuardedFetcher;
  rules: PageRules;
  findings: Findings;
  /** Aborts when the time budget runs out. */
  signal: AbortSignal;
}

/** The refusal of what the time budget cut. */
export const timeRefusal = (ctx: Pick<DiscoveryContext, 'bounds'>, url: string) =>
  new Refused(url, `the time budget of ${ctx.bounds.timeBudgetMs} ms ran out while reading it`, 'time');

/**
 * Notes why a document was not read (whole): its refusal, the time budget, or the error that
 * broke it off (a reset connection, a corrupt gzip stream).
 */
export function noteFailure(ctx: DiscoveryContext, url: string, error: unknown): void {
  if (error instanceof Refused) ctx.findings.refuseWith(error);
  else if (ctx.signal.aborted) ctx.findings.refuseWith(timeRefusal(ctx, url));
  else ctx.findings.refuse(url, `could not be read: ${String((error as Error).message ?? error).slice(0, 200)}`);
}

/** Counts a URL of the site as the rules judge it; false once maxPages is reached. */
export function offerPage(ctx: DiscoveryContext, url: URL, verdict: 'keep' | 'pattern' | 'robots'): boolean {
  const { findings } = ctx;
  if (verdict !== 'keep') {
    findings.excluded[verdict]++;
    return true;
  }
  const { href } = url;
  if (findings.pages.has(href)) return true;
  if (findings.pages.size >= ctx.maxPages) {
    findings.stop('maxPages', `the site's maxPages (${ctx.maxPages}) were found; the rest were not read`);
    return false;
  }
  findings.pages.add(href);
  return true;
}

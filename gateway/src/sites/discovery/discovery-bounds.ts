/**
 * The bounds of one discovery. A site's robots.txt, sitemaps and pages are a stranger's input:
 * each bound stops reading there and says so in the result (`cut`, `refused`), so a hostile or
 * broken site costs at most this much.
 *
 * - `maxRedirects` (5): hops followed per document, each through the target guard; a URL seen
 *   twice in one chain is a loop, refused at once.
 * - `robotsBytes` (500 KiB, as Google reads): of a robots.txt, on the wire and decompressed;
 *   the rules of the lines before the bound are used.
 * - `sitemapBytes` (50 MiB, the sitemap protocol's limit): of one sitemap, on the wire AND
 *   decompressed, so a gzip bomb stops at 50 MiB of output.
 * - `pageBytes` (5 MiB): of one crawled page.
 * - `maxSitemaps` (100): sitemap documents read, indexes included.
 * - `maxIndexDepth` (2): an index may list indexes, whose children must be sitemaps of pages.
 * - `maxEntries` (100,000): page entries read across every sitemap, kept or not.
 * - `maxPages` (50,000): the ceiling of a site's own maxPages (pages kept; a crawl also fetches
 *   no more than maxPages pages).
 * - `crawlDepth` (3): links followed from the origin's home page when there is no sitemap.
 * - `timeBudgetMs` (120 s): the whole discovery, DNS, connections and slow bodies included.
 * - `refusalsKept` (100): refusals listed in the result (all are counted).
 */
export interface DiscoveryBounds {
  maxRedirects: number;
  robotsBytes: number;
  sitemapBytes: number;
  pageBytes: number;
  maxSitemaps: number;
  maxIndexDepth: number;
  maxEntries: number;
  maxPages: number;
  crawlDepth: number;
  crawlConcurrency: number;
  timeBudgetMs: number;
  refusalsKept: number;
}

export const DISCOVERY_BOUNDS: DiscoveryBounds = {
  maxRedirects: 5,
  robotsBytes: 500 * 1024,
  sitemapBytes: 50 * 1024 * 1024,
  pageBytes: 5 * 1024 * 1024,
  maxSitemaps: 100,
  maxIndexDepth: 2,
  maxEntries: 100_000,
  maxPages: 50_000,
  crawlDepth: 3,
  crawlConcurrency: 4,
  timeBudgetMs: 120_000,
  refusalsKept: 100,
};

/** Which bound cut a discovery short. */
export type Bound = 'maxPages' | 'entries' | 'sitemaps' | 'indexDepth' | 'bytes' | 'time';

/** A document (or an entry) not read, or not read whole, and why: a reason a user can act on. */
export class Refused extends Error {
  readonly url: string;
  /** The bound that stopped it, when one did (a redirect loop or a private address is no bound). */
  readonly bound: Bound | undefined;
  constructor(url: string, reason: string, bound?: Bound) {
    super(reason);
    this.name = 'Refused';
    this.url = url;
    this.bound = bound;
  }
}

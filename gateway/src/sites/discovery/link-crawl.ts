import pLimit from 'p-limit';
import { decodedBody } from './bounded-body.ts';
import { noteFailure, offerPage, type DiscoveryContext } from './discovery-context.ts';
import { readLinks } from './html-links.ts';
import { pageVerdict, ROBOTS_AGENT } from './page-filter.ts';

interface Crawl {
  /** Every URL met, fetched or not: each is fetched once. */
  seen: Set<string>;
  fetched: number;
  /** Whether links were left unfollowed because maxPages pages were to be fetched already. */
  more: boolean;
}

const isHtml = (contentType: string) => /^\s*(text\/html|application\/xhtml\+xml)\b/i.test(contentType);

/** Fetches one page of the site; keeps it if it is HTML the rules keep; answers the links worth following. */
async function visit(ctx: DiscoveryContext, crawl: Crawl, url: URL, followLinks: boolean): Promise<URL[]> {
  const links: URL[] = [];
  try {
    const answer = await ctx.fetcher.get(url, { origin: ctx.origin });
    try {
      if (answer.status < 200 || answer.status > 299 || !isHtml(answer.contentType)) return links;
      // A redirect within the origin: the page is where it landed.
      const verdict = pageVerdict(answer.url, ctx.rules);
      if (verdict !== 'other-origin' && !offerPage(ctx, answer.url, verdict)) return links;
      if (!followLinks) return links;
      const counts = { wire: 0, decoded: 0 };
      const body = decodedBody(url.href, answer.body, answer.contentEncoding, { limit: ctx.bounds.pageBytes, counts });
      // The next level holds no more pages than may still be fetched.
      const room = ctx.maxPages - crawl.fetched;
      await readLinks(body, answer.url, (link) => {
        if (link.origin !== ctx.origin || crawl.seen.has(link.href)) return true;
        if (links.length >= room) {
          crawl.more = true;
          return false;
        }
        crawl.seen.add(link.href);
        links.push(link);
        return true;
      });
    } finally {
      answer.discard();
    }
  } catch (error) {
    noteFailure(ctx, url.href, error);
  }
  return links;
}

/** Whether a URL met by the crawl may be fetched: robots.txt and exclude patterns say no to some. */
function mayFetch(ctx: DiscoveryContext, url: URL): boolean {
  if (ctx.rules.robots?.isAllowed(url.href, ROBOTS_AGENT) === false) {
    ctx.findings.excluded.robots++;
    return false;
  }
  const verdict = pageVerdict(url, { ...ctx.rules, include: [], robots: null });
  if (verdict === 'pattern') ctx.findings.excluded.pattern++;
  return verdict === 'keep';
}

/**
 * A link crawl of the origin from its home page, breadth first, level by level: pages within
 * `crawlDepth` links of the home page, at most maxPages of them fetched, `crawlConcurrency` at a
 * time. A page is kept when it answers HTML and the rules keep it; pages the include patterns
 * leave out are still followed (a product is reached through its category), excluded ones are not.
 */
export async function crawlLinks(ctx: DiscoveryContext): Promise<void> {
  const home = new URL('/', ctx.origin);
  const crawl: Crawl = { seen: new Set([home.href]), fetched: 0, more: false };
  const limit = pLimit(ctx.bounds.crawlConcurrency);
  let level = [home];
  for (let depth = 0; level.length > 0 && !ctx.findings.done; depth++) {
    const follow = depth < ctx.bounds.crawlDepth;
    const next = await Promise.all(
      level
        .filter((url) => mayFetch(ctx, url))
        .map((url) =>
          limit(async () => {
            if (ctx.findings.done) return [];
            if (crawl.fetched >= ctx.maxPages) {
              ctx.findings.stop('maxPages', `the site's maxPages (${ctx.maxPages}) pages were crawled`);
              return [];
            }
            crawl.fetched++;
            ctx.findings.crawled++;
            return visit(ctx, crawl, url, follow);
          }),
        ),
    );
    level = follow ? next.flat() : [];
  }
  if (crawl.more)
    ctx.findings.stop('maxPages', `the site's maxPages (${ctx.maxPages}) pages were crawled; links were left`);
}

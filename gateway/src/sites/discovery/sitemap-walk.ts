import { decodedBody, type ByteCounts } from './bounded-body.ts';
import { noteFailure, offerPage, type DiscoveryContext } from './discovery-context.ts';
import type { DocumentRead } from './findings.ts';
import { pageVerdict } from './page-filter.ts';
import { readSitemap, LOC_CHARS, type SitemapEntry } from './sitemap-parser.ts';

/** A sitemap to read, and how many indexes led to it (0: named by robots.txt or the site). */
interface Queued {
  url: URL;
  level: number;
}

interface Walk {
  queue: Queued[];
  /** Every sitemap URL queued once: an index listing itself (or a cycle of them) reads nothing twice. */
  seen: Set<string>;
}

/** A page entry: refused off the origin, counted; false once a bound ends the reading. */
function onPage(ctx: DiscoveryContext, url: URL): boolean {
  const { findings } = ctx;
  if (++findings.entries > ctx.bounds.maxEntries) {
    findings.stop('entries', `${ctx.bounds.maxEntries} sitemap entries were read; the rest were not`);
    return false;
  }
  const verdict = pageVerdict(url, ctx.rules);
  if (verdict === 'other-origin') {
    findings.refuse(url.href, `not on the site's origin ${ctx.origin}`);
    return true;
  }
  return offerPage(ctx, url, verdict);
}

/** An index's child: queued unless seen, nested too deep, or past the sitemaps bound. */
function onChild(ctx: DiscoveryContext, walk: Walk, from: Queued, url: URL): boolean {
  const { bounds, findings } = ctx;
  if (walk.seen.has(url.href)) return true;
  if (walk.seen.size >= bounds.maxSitemaps) {
    findings.stop('sitemaps', `${bounds.maxSitemaps} sitemaps were listed; the rest were not read`);
    return false;
  }
  walk.seen.add(url.href);
  walk.queue.push({ url, level: from.level + 1 });
  return true;
}

function onEntry(ctx: DiscoveryContext, walk: Walk, from: Queued, document: DocumentRead, entry: SitemapEntry) {
  document.entries++;
  if (ctx.findings.done) return false;
  const url = entry.loc.length < LOC_CHARS ? URL.parse(entry.loc, from.url.href) : null;
  if (!url) {
    ctx.findings.refuse(entry.loc.slice(0, 200), 'not a URL (or longer than 4,096 characters)');
    return true;
  }
  if (url.hash) url.hash = '';
  if (entry.kind === 'page') return onPage(ctx, url);
  if (from.level >= ctx.bounds.maxIndexDepth) {
    const reason = `a sitemap index nested more than ${ctx.bounds.maxIndexDepth} levels deep: not read`;
    ctx.findings.refuse(from.url.href, reason, 'indexDepth');
    return false;
  }
  return onChild(ctx, walk, from, url);
}

/** Reads one sitemap; a refusal (the guard, a redirect loop, a bound, the time) is noted, not thrown. */
async function readOne(ctx: DiscoveryContext, walk: Walk, item: Queued): Promise<void> {
  const counts: ByteCounts = { wire: 0, decoded: 0 };
  let document: DocumentRead | undefined;
  try {
    const answer = await ctx.fetcher.get(item.url);
    document = { url: item.url.href, kind: 'sitemap', status: answer.status, wireBytes: 0, bytes: 0, entries: 0 };
    ctx.findings.documents.push(document);
    try {
      if (answer.status < 200 || answer.status > 299) {
        if (answer.status !== 404 && answer.status !== 410) ctx.findings.unread++;
        return;
      }
      const limit = ctx.bounds.sitemapBytes;
      const body = decodedBody(item.url.href, answer.body, answer.contentEncoding, { limit, counts });
      const seen = document;
      const root = await readSitemap(body, (entry) => onEntry(ctx, walk, item, seen, entry));
      if (root !== 'urlset' && root !== 'sitemapindex')
        ctx.findings.refuse(item.url.href, `not a sitemap: ${root ? `its root element is <${root}>` : 'it is empty'}`);
    } finally {
      answer.discard();
    }
  } catch (error) {
    ctx.findings.unread++;
    noteFailure(ctx, item.url.href, error);
  } finally {
    if (document) Object.assign(document, { wireBytes: counts.wire, bytes: counts.decoded });
  }
}

/**
 * Reads the sitemaps named (and the sitemaps their indexes list, breadth first), one at a time
 * and each as a stream: memory holds the pages found, never a document.
 */
export async function walkSitemaps(ctx: DiscoveryContext, named: readonly URL[]): Promise<void> {
  const walk: Walk = { queue: [], seen: new Set() };
  for (const url of named) onChild(ctx, walk, { url, level: -1 }, url);
  for (let item = walk.queue.shift(); item && !ctx.findings.done; item = walk.queue.shift()) {
    await readOne(ctx, walk, item);
  }
}

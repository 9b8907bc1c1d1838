import { decodedBody, type ByteCounts } from './bounded-body.ts';
import { Refused } from './discovery-bounds.ts';
import { noteFailure, type DiscoveryContext } from './discovery-context.ts';
import { parseRobots, type Robot } from './page-filter.ts';

/** A site's robots.txt as discovery reads it: its rules (null: none) and its `Sitemap:` lines. */
export interface RobotsRules {
  robots: Robot | null;
  sitemaps: string[];
}

/** The text of the body up to the bound; past it, the lines before the bound (as Google reads). */
async function boundedText(url: string, body: AsyncIterable<Buffer>, ctx: DiscoveryContext) {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of body) chunks.push(chunk);
    return Buffer.concat(chunks).toString('utf8');
  } catch (error) {
    if (!(error instanceof Refused) || error.bound !== 'bytes') throw error;
    ctx.findings.refuse(url, `${error.message}; the rules of its lines before that are used`);
    const text = Buffer.concat(chunks).toString('utf8');
    return text.slice(0, text.lastIndexOf('\n') + 1);
  }
}

/**
 * Reads `/robots.txt` (redirects followed through the guard, at most `robotsBytes`). An answer
 * other than 2xx, or none, means no rules (RFC 9309 has 4xx mean so; a 5xx is read the same way
 * here, since the site's own owner asked for the discovery, and the refusal says so).
 */
export async function readRobots(ctx: DiscoveryContext): Promise<RobotsRules> {
  const url = new URL('/robots.txt', ctx.origin);
  const counts: ByteCounts = { wire: 0, decoded: 0 };
  let text = '';
  try {
    const answer = await ctx.fetcher.get(url);
    const document = {
      url: url.href,
      kind: 'robots' as const,
      status: answer.status,
      wireBytes: 0,
      bytes: 0,
      entries: 0,
    };
    ctx.findings.documents.push(document);
    if (answer.status < 200 || answer.status > 299) {
      answer.discard();
      if (answer.status >= 500) {
        ctx.findings.unread++;
        ctx.findings.refuse(url.href, `answered HTTP ${answer.status}: read as no rules`);
      }
      return { robots: null, sitemaps: [] };
    }
    try {
      const body = decodedBody(url.href, answer.body, answer.contentEncoding, {
        limit: ctx.bounds.robotsBytes,
        counts,
      });
      text = await boundedText(url.href, body, ctx);
    } finally {
      answer.discard();
      Object.assign(document, { wireBytes: counts.wire, bytes: counts.decoded });
    }
  } catch (error) {
    ctx.findings.unread++;
    noteFailure(ctx, url.href, error);
    return { robots: null, sitemaps: [] };
  }
  const robots = parseRobots(url.href, text);
  return { robots, sitemaps: robots.getSitemaps() };
}

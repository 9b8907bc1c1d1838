import { Parser } from 'htmlparser2';

/** A `<loc>` of a sitemap: a page (`<url>`) or, in an index, a sitemap (`<sitemap>`). */
export interface SitemapEntry {
  kind: 'page' | 'sitemap';
  loc: string;
}

/** The protocol's longest URL is 2,048 characters; a longer `<loc>` is cut here and refused by its reader. */
export const LOC_CHARS = 4096;

const localName = (name: string) => (name.includes(':') ? name.slice(name.indexOf(':') + 1) : name).toLowerCase();

/**
 * Reads a sitemap (a `<urlset>` or a `<sitemapindex>`) as it arrives, calling `onEntry` for each
 * `<loc>`; `onEntry` answers false to stop reading (the rest of the body is never pulled).
 * Answers the root element's name (lower case, without prefix), or null for an empty body.
 *
 * Why htmlparser2 in xmlMode rather than a strict XML parser (saxes, sax): it is a streaming
 * parser (write a chunk, get events, nothing held but the current token), actively maintained,
 * and the fastest of them; it is lenient where real sitemaps are broken (an unescaped `&` in a
 * URL, a BOM or blank line before `<?xml`), which a conforming parser would reject whole; it
 * expands no DTD or external entity (no XXE, no billion laughs); and the crawl already needs it
 * for HTML, so discovery has one parser, not two.
 */
export async function readSitemap(
  body: AsyncIterable<Buffer>,
  onEntry: (entry: SitemapEntry) => boolean,
): Promise<string | null> {
  let root: string | null = null;
  let depth = 0;
  let item: SitemapEntry['kind'] | null = null;
  let loc: string | null = null;
  let stopped = false;
  const parser = new Parser(
    {
      onopentag(name) {
        const tag = localName(name);
        depth++;
        if (depth === 1) root = tag;
        else if (depth === 2 && (tag === 'url' || tag === 'sitemap')) item = tag === 'url' ? 'page' : 'sitemap';
        else if (depth === 3 && item && tag === 'loc') loc = '';
      },
      ontext(text) {
        if (loc !== null && loc.length < LOC_CHARS) loc += text.slice(0, LOC_CHARS - loc.length);
      },
      onclosetag() {
        if (depth === 3 && loc !== null && item && !stopped) {
          stopped = !onEntry({ kind: item, loc: loc.trim() });
          loc = null;
        } else if (depth === 2) item = null;
        depth--;
      },
    },
    { xmlMode: true },
  );
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.write(decoder.decode(chunk, { stream: true }));
    // Not a sitemap (an HTML page answering 200, a feed): nothing of it is worth reading on.
    if (root !== null && root !== 'urlset' && root !== 'sitemapindex') stopped = true;
    if (stopped) return root;
  }
  parser.write(decoder.decode());
  parser.end();
  return root;
}

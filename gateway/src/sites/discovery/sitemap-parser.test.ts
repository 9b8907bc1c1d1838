import { describe, expect, it } from 'vitest';
import { readSitemap, type SitemapEntry } from './sitemap-parser.ts';

/** A body arriving in pieces of `size` bytes, as a network would cut it. */
async function* pieces(text: string, size = 7) {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function read(text: string, size?: number) {
  const entries: SitemapEntry[] = [];
  const root = await readSitemap(pieces(text, size), (entry) => entries.push(entry) > 0);
  return { root, entries };
}

describe('readSitemap', () => {
  it('reads the <loc> of each <url> of a urlset, cut anywhere, entities and CDATA decoded', async () => {
    const xml = `\ufeff<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> https://shop.example/a?x=1&amp;y=2 </loc><lastmod>2026-01-01</lastmod></url>
  <url><loc><![CDATA[https://shop.example/ü]]></loc></url>
  <url><image:image><image:loc>https://cdn.example/i.png</image:loc></image:image><loc>https://shop.example/c</loc></url>
</urlset>`;
    for (const size of [1, 3, 1000]) {
      const { root, entries } = await read(xml, size);
      expect(root).toBe('urlset');
      expect(entries).toEqual([
        { kind: 'page', loc: 'https://shop.example/a?x=1&y=2' },
        { kind: 'page', loc: 'https://shop.example/ü' },
        { kind: 'page', loc: 'https://shop.example/c' },
      ]);
    }
  });

  it('reads an index as sitemaps, and a prefixed namespace as its local names', async () => {
    const xml = `<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sm:sitemap><sm:loc>https://shop.example/s1.xml</sm:loc></sm:sitemap>
      <sm:sitemap><sm:loc>https://shop.example/s2.xml.gz</sm:loc></sm:sitemap></sm:sitemapindex>`;
    expect(await read(xml)).toEqual({
      root: 'sitemapindex',
      entries: [
        { kind: 'sitemap', loc: 'https://shop.example/s1.xml' },
        { kind: 'sitemap', loc: 'https://shop.example/s2.xml.gz' },
      ],
    });
  });

  it('stops reading once told to: the rest of the body is never pulled', async () => {
    let pulled = 0;
    async function* endless() {
      yield Buffer.from('<urlset>');
      for (;;) {
        pulled++;
        yield Buffer.from(`<url><loc>https://shop.example/${pulled}</loc></url>`);
      }
    }
    let seen = 0;
    await readSitemap(endless(), () => ++seen < 10);
    expect(seen).toBe(10);
    expect(pulled).toBe(10);
  });

  it('answers the root of what is not a sitemap and reads none of its links', async () => {
    expect(await read('<html><body><a href="/x">x</a><loc>https://shop.example/</loc></body></html>')).toEqual({
      root: 'html',
      entries: [],
    });
  });
});

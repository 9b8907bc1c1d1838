import { gzipSync } from 'node:zlib';
import { DEMO_SHOP_PATHS } from './demo-site-shop-pages.ts';

/** Where the shop's sitemaps are: robots.txt names the index, the index its two children. */
export const SHOP_SITEMAPS = {
  index: '/sitemap-index.xml',
  plain: '/sitemaps/pages-1.xml',
  gzip: '/sitemaps/pages-2.xml.gz',
} as const;

const HALF = Math.ceil(DEMO_SHOP_PATHS.length / 2);

export function robotsTxt(origin: string): string {
  return `User-agent: *\nAllow: /\n\nSitemap: ${origin}${SHOP_SITEMAPS.index}\n`;
}

export function sitemapIndex(origin: string): string {
  const entry = (path: string) => `  <sitemap><loc>${origin}${path}</loc><lastmod>2026-01-01</lastmod></sitemap>\n`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${entry(SHOP_SITEMAPS.plain)}${entry(SHOP_SITEMAPS.gzip)}</sitemapindex>
`;
}

function urlset(origin: string, paths: readonly string[]): string {
  const entries = paths.map((path) => `  <url><loc>${origin}${path}</loc></url>\n`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${entries}</urlset>
`;
}

/** The first half of the pages, as plain XML. */
export const plainSitemap = (origin: string) => urlset(origin, DEMO_SHOP_PATHS.slice(0, HALF));

/** The other half, gzip-compressed as a file (not a Content-Encoding): what `.xml.gz` sitemaps are. */
export const gzipSitemap = (origin: string) => gzipSync(urlset(origin, DEMO_SHOP_PATHS.slice(HALF)));

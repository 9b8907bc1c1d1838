import { createHash } from 'node:crypto';

/**
 * The pages of a group that are measured: the `size` with the smallest SHA-256(siteId, url)
 * (rendezvous hashing). A page's rank never depends on the other pages, so adding or removing
 * one changes the sample by at most that page, and trends keep following the same pages.
 * The site's id is in the hash so two sites do not all sample the same kind of URL.
 */
export function samplePages(siteId: string, urls: Iterable<string>, size: number | 'all'): string[] {
  const unique = [...new Set(urls)];
  if (size === 'all') return unique.sort();
  return unique
    .map((url) => ({ url, rank: createHash('sha256').update(`${siteId}\n${url}`).digest('hex') }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0))
    .slice(0, size)
    .map(({ url }) => url)
    .sort();
}

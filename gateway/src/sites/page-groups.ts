import { URLPattern } from 'node:url';
import { z } from 'zod';
import { samplePages } from './page-groups-sample.ts';
import { inferTemplates } from './page-groups-template.ts';

export { samplePages } from './page-groups-sample.ts';

const DEFAULT_SAMPLE_SIZE = 3;

/** A user's pattern: a URLPattern pathname (`/product/:id`, `/docs/*`). */
const pageGroupPatternSchema = z
  .string()
  .min(1)
  .max(500)
  .startsWith('/')
  .refine(
    (pattern) => {
      try {
        new URLPattern({ pathname: pattern });
        return true;
      } catch {
        return false;
      }
    },
    { message: 'not a URL pattern pathname (like /product/:id or /docs/*)' },
  );

const pageGroupingSchema = z.object({
  siteId: z.string().min(1),
  urls: z.array(z.url()),
  /** Tried in order; the first that matches a page's path names its group. */
  patterns: z.array(pageGroupPatternSchema).max(100).default([]),
  /** Pages measured per group; `all` measures every page. */
  sampleSize: z.union([z.number().int().min(1).max(1000), z.literal('all')]).default(DEFAULT_SAMPLE_SIZE),
});
export type PageGrouping = z.input<typeof pageGroupingSchema>;

export interface PageGroup {
  /** The route template (`/product/:id`), the user's pattern, or a lone page's path. */
  name: string;
  /** Whether a user's pattern named the group or it was inferred from the URLs. */
  source: 'pattern' | 'inferred';
  /** Every page of the group, sorted. */
  urls: string[];
  /** The pages measured, sorted. */
  sample: string[];
}

/**
 * A site's pages in groups by route template, each with its sample. The answer depends only on
 * the set of URLs (not their order): groups sorted by name, pages and samples sorted.
 */
export function groupPages(input: PageGrouping): PageGroup[] {
  const { siteId, urls, patterns, sampleSize } = pageGroupingSchema.parse(input);
  const compiled = patterns.map((pattern) => ({ pattern, matcher: new URLPattern({ pathname: pattern }) }));
  const byPattern = new Map<string, string[]>();
  const byPath = new Map<string, string[]>();
  for (const url of [...new Set(urls)].sort()) {
    const { pathname } = new URL(url);
    const match = compiled.find(({ matcher }) => matcher.test({ pathname }));
    const [groups, key] = match ? [byPattern, match.pattern] : [byPath, pathname];
    const members = groups.get(key);
    if (members === undefined) groups.set(key, [url]);
    else members.push(url);
  }
  const groups: PageGroup[] = [];
  const add = (name: string, source: PageGroup['source'], members: string[]) =>
    groups.push({ name, source, urls: members.sort(), sample: samplePages(siteId, members, sampleSize) });
  for (const [pattern, members] of byPattern) add(pattern, 'pattern', members);
  for (const [template, paths] of inferTemplates(byPath.keys())) {
    add(
      template,
      'inferred',
      paths.flatMap((path) => byPath.get(path) ?? []),
    );
  }
  return groups.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

import robotsParserModule from 'robots-parser';

/** The part of robots-parser's Robot discovery uses. */
export interface Robot {
  isAllowed(url: string, ua?: string): boolean | undefined;
  getSitemaps(): string[];
}

/**
 * robots-parser (the parser Lighthouse's own robots audit uses; RFC 9309's wildcards and longest
 * match, `Sitemap:` lines of any case). A CommonJS module whose typings give no callable default
 * export under nodenext: its default import is the function, typed here.
 */
export const parseRobots = robotsParserModule as unknown as (url: string, text: string) => Robot;

/** Why a URL of the sitemap or the crawl is not one of the site's pages. */
export type Verdict = 'keep' | 'other-origin' | 'pattern' | 'robots';

/**
 * Include/exclude patterns are URLPattern pathname patterns (global in Node 24, a web standard):
 * `/product/*`, `/blog/:slug`, `/(en|de)/*` — the same syntax as the route templates pages are
 * grouped by (`/product/:id`), so one way of writing a path serves both. A glob library would
 * have been a second syntax for the same thing.
 */
export function compilePatterns(patterns: readonly string[]): URLPattern[] {
  return patterns.map((pathname) => new URLPattern({ pathname }));
}

/** Whether `pattern` is one URLPattern reads as a path: for the request's check. */
export function isPathPattern(pattern: string): boolean {
  try {
    new URLPattern({ pathname: pattern });
    return pattern.startsWith('/') || pattern.startsWith('*');
  } catch {
    return false;
  }
}

export interface PageRules {
  origin: string;
  include: readonly URLPattern[];
  exclude: readonly URLPattern[];
  robots: Robot | null;
}

/** The robots.txt group discovery reads: its own when a site names it, else `*`'s. */
export const ROBOTS_AGENT = 'perfwatch';

export function pageVerdict(url: URL, rules: PageRules): Verdict {
  if (url.origin !== rules.origin) return 'other-origin';
  const path = { pathname: url.pathname };
  if (rules.exclude.some((pattern) => pattern.test(path))) return 'pattern';
  if (rules.include.length > 0 && !rules.include.some((pattern) => pattern.test(path))) return 'pattern';
  if (rules.robots?.isAllowed(url.href, ROBOTS_AGENT) === false) return 'robots';
  return 'keep';
}

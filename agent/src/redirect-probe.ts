import { guardedGet } from './guarded-get.ts';
import type { TargetGuard } from '@perfwatch/common';

/** Chrome gives up after 20 redirects (net::ERR_TOO_MANY_REDIRECTS). */
const MAX_REDIRECTS = 20;

/**
 * Follows `url`'s redirects one hop at a time and says whether they go on past Chrome's limit.
 * Asked only after Lighthouse reported Chrome's error page, which hides the net error behind
 * "Chrome prevented page load with an interstitial": a redirect loop is then named as such.
 * Returns a sentence for the user, or null when the redirects end (the failure was something else).
 */
export async function findRedirectLoop(
  url: string,
  { guard, timeoutMs = 5_000 }: { guard?: TargetGuard | undefined; timeoutMs?: number } = {},
): Promise<string | null> {
  const seen: string[] = [url];
  let current = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const res = await guardedGet(current, { guard, timeoutMs }).catch(() => null);
    if (!res) return null;
    res.destroy();
    const location = res.headers.location;
    if (!res.statusCode || res.statusCode < 300 || res.statusCode >= 400 || !location) return null;
    current = new URL(location, current).href;
    seen.push(current);
  }
  const loopsBack = seen.indexOf(current) < seen.length - 1;
  return `the page redirects more than ${MAX_REDIRECTS} times${loopsBack ? ' in a loop' : ''} (${seen[0]} → ${seen[1]} → … → ${current})`;
}

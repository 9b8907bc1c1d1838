/**
 * Which of the demo shop's pages a site-scan bench measures, and what each tool measured of a
 * page. The sample is fixed by N alone, so every run and every tool sees the same pages.
 */
import { DEMO_SHOP_GROUPS } from '@perfwatch/local';

/** One page as a tool measured it: the performance score (0–100) and LCP (ms). */
export interface PageValue {
  score: number;
  lcpMs: number;
}

/** A tool's scan of the pages at one parallelism: its wall time and each page's values, by path. */
export interface ToolScan {
  /** 'perfwatch', 'perfwatch, re-tests off', 'Unlighthouse' or 'stock lighthouse'. */
  tool: string;
  parallelism: number;
  wallMs: number;
  pages: Map<string, PageValue>;
  /** The machine's 1-minute load average as the scan ended: what else ran beside it. */
  loadAvg: number;
  /** What the wall time holds beyond one run a page (perfwatch's re-tests of suspect runs). */
  note?: string;
}

/** The shop's ten templates: each route's pages, and the fixed pages (`/`, `/about`) as one. */
function templates(): string[][] {
  const fixed = DEMO_SHOP_GROUPS.filter((group) => !group.name.includes(':')).flatMap((group) => group.paths);
  const routes = DEMO_SHOP_GROUPS.filter((group) => group.name.includes(':')).map((group) => [...group.paths]);
  return [fixed, ...routes];
}

/**
 * `n` paths spread over the templates: the quota dealt one page at a time to each template in
 * turn (a template with no page left is passed over), each template's pages taken at evenly
 * spaced positions. n = 200 is every page.
 */
export function samplePaths(n: number): string[] {
  const all = templates();
  const total = all.reduce((sum, paths) => sum + paths.length, 0);
  if (!Number.isInteger(n) || n < 1 || n > total) throw new Error(`--pages must be 1 to ${total}, not ${n}`);
  const quota = all.map(() => 0);
  for (let dealt = 0, t = 0; dealt < n; t = (t + 1) % all.length) {
    if (quota[t]! < all[t]!.length) {
      quota[t]!++;
      dealt++;
    }
  }
  return all.flatMap((paths, t) =>
    Array.from({ length: quota[t]! }, (_, i) => paths[Math.floor(((i + 0.5) * paths.length) / quota[t]!)]!),
  );
}

/** The values of `paths` a scan has; throws naming every page the tool left without a result. */
export function valuesOf(scan: ToolScan, paths: readonly string[]): PageValue[] {
  const missing = paths.filter((path) => !scan.pages.has(path));
  if (missing.length > 0)
    throw new Error(
      `${scan.tool} at parallelism ${scan.parallelism} has no result for ${missing.length} page(s): ${missing.join(', ')}`,
    );
  return paths.map((path) => scan.pages.get(path)!);
}

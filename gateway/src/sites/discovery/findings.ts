import type { Bound, Refused } from './discovery-bounds.ts';

/** A robots.txt or sitemap that answered: where the pages came from. */
export interface DocumentRead {
  url: string;
  kind: 'robots' | 'sitemap';
  status: number;
  /** Bytes as sent, and once decompressed. */
  wireBytes: number;
  bytes: number;
  /** `<loc>` entries read from it (a sitemap's). */
  entries: number;
}

/** What one discovery found, what it refused and why, and where a bound cut it. */
export interface DiscoveryResult {
  /** Pages of the site's origin, in the order found, each once. */
  pages: string[];
  source: 'sitemap' | 'crawl';
  documents: DocumentRead[];
  /** Pages fetched by the crawl. */
  crawled: number;
  /** Page entries read from sitemaps, kept or not. */
  entries: number;
  /** Pages left out as the site asked: by its exclude/include patterns, by robots.txt. */
  excluded: { pattern: number; robots: number };
  /** The first `refusalsKept` refusals; `refusedTotal` counts them all. */
  refused: Array<{ url: string; reason: string }>;
  refusedTotal: number;
  /** Each bound that stopped reading, with the first reason it gave; empty: nothing was cut. */
  cut: Array<{ bound: Bound; reason: string }>;
  /**
   * robots.txt and sitemaps not read whole: refused, broken off, or answering other than 2xx or
   * 404/410 (a site's word that there is none; so is a 2xx that is no sitemap, as a site
   * answering every path with its home page does). Not 0: pages they list may have been missed.
   */
  unread: number;
  elapsedMs: number;
}

/** The bounds after which discovery reads nothing more at all. */
const FINAL: readonly Bound[] = ['maxPages', 'entries', 'time'];

/** The tally a discovery keeps while it reads. */
export class Findings {
  readonly pages = new Set<string>();
  readonly documents: DocumentRead[] = [];
  readonly refused: DiscoveryResult['refused'] = [];
  readonly excluded = { pattern: 0, robots: 0 };
  readonly cut = new Map<Bound, string>();
  refusedTotal = 0;
  unread = 0;
  entries = 0;
  crawled = 0;
  readonly #refusalsKept: number;

  constructor(refusalsKept: number) {
    this.#refusalsKept = refusalsKept;
  }

  refuse(url: string, reason: string, bound?: Bound): void {
    this.refusedTotal++;
    if (this.refused.length < this.#refusalsKept) this.refused.push({ url: url.slice(0, 500), reason });
    if (bound) this.stop(bound, reason);
  }

  refuseWith(refusal: Refused): void {
    this.refuse(refusal.url, refusal.message, refusal.bound);
  }

  stop(bound: Bound, reason: string): void {
    if (!this.cut.has(bound)) this.cut.set(bound, reason);
  }

  /** Whether a bound has ended the whole discovery. */
  get done(): boolean {
    return FINAL.some((bound) => this.cut.has(bound));
  }

  result(source: DiscoveryResult['source'], elapsedMs: number): DiscoveryResult {
    return {
      pages: [...this.pages],
      source,
      documents: this.documents,
      crawled: this.crawled,
      entries: this.entries,
      excluded: this.excluded,
      refused: this.refused,
      refusedTotal: this.refusedTotal,
      cut: [...this.cut].map(([bound, reason]) => ({ bound, reason })),
      unread: this.unread,
      elapsedMs: Math.round(elapsedMs),
    };
  }
}

import { z } from 'zod';
import {
  storedBudgets,
  storedBudgetsSchema,
  DEVICES,
  LOCATIONS,
  type Budgets,
  type Device,
  type Location,
} from '@perfwatch/common';
import { ownId, type StoredForms } from '../../store/record-forms.ts';

/** Where a site's pages are listed: found from robots.txt and /sitemap.xml, or this sitemap's URL (on the origin). */
type SitemapSource = 'discover' | (string & {});

/**
 * A whole site watched by its origin (issue 34): where its pages are found, which of them count,
 * how they are grouped and sampled, and how the samples are measured (a project's settings).
 */
export interface SiteRecord {
  id: string;
  /** The owning organisation's id, as every record's. */
  userId: string;
  /** scheme://host[:port], normalised (URL.origin): one site per origin and organisation. */
  origin: string;
  sitemap: SitemapSource;
  /** Path patterns a page must match one of to count (none: every page). */
  include: string[];
  /** Path patterns a page must match none of. */
  exclude: string[];
  maxPages: number;
  /** Pages measured per group. */
  sampleSize: number;
  /** Route templates (`/product/:id`) that override those inferred from the URLs. */
  groupPatterns: string[];
  /** As a project's: null, never set (both devices). */
  devices: Device[] | null;
  locations: Location[];
  defaultLocation: Location;
  runs: number;
  /** Cron expression (UTC) of discovery and measuring; null: on request only. */
  schedule: string | null;
  /** Budgets every page inherits (none: empty); site-budgets.ts resolves them at each check. */
  budgets: Budgets;
  /** Budgets by group template (`/product/:id`), inherited by that group's pages over the site's. */
  groupBudgets: Record<string, Budgets>;
  /** The last discovery's state (site-discovery-run.ts); null: none asked yet. */
  lastDiscovery: SiteDiscoveryState | null;
  /** The latest tick of its schedule handled (site-schedule.ts); null: none. */
  scheduledThrough: Date | null;
  createdAt: Date;
}

/** What a site's last discovery did: running (`pending`), its counts (`done`), or why it `failed`. */
export interface SiteDiscoveryState {
  /** When it started (pending) or ended, ISO 8601. */
  at: string;
  state: 'pending' | 'done' | 'failed';
  added: number;
  gone: number;
  /** URLs refused (all of them, not only those kept). */
  refused: number;
  /** The bounds that cut it short. */
  cut: string[];
  /**
   * Whether it read everything: nothing cut it, every robots.txt and sitemap answered, and it
   * was not stopped. Only a complete discovery marks pages gone (pagesAfterDiscovery).
   */
  complete: boolean;
  /** Why it failed; null otherwise. */
  reason: string | null;
}

/** A site's budgets: its own and its groups'. */
export type SiteBudgets = Pick<SiteRecord, 'budgets' | 'groupBudgets'>;

export type NewSite = Omit<SiteRecord, 'id' | 'createdAt' | keyof SiteBudgets | 'lastDiscovery' | 'scheduledThrough'> &
  Partial<SiteBudgets>;

/** What may change after the site is made (PATCH /v1/sites); its origin names it, so stays. */
export type SiteSettings = Omit<
  SiteRecord,
  'id' | 'userId' | 'origin' | keyof SiteBudgets | 'createdAt' | 'lastDiscovery' | 'scheduledThrough'
>;

/** A page of a site, as its discoveries found it: kept once gone, so a site can show what went. */
export interface SitePageRecord {
  siteId: string;
  url: string;
  /** Its route template (`/product/:id`). */
  group: string;
  /** Whether it is among its group's measured sample. */
  sampled: boolean;
  firstSeenAt: Date;
  lastSeenAt: Date;
  /** When a discovery first no longer found it; null: found by the last one. */
  goneAt: Date | null;
}

/** A page as a discovery hands it over. */
export type FoundPage = Pick<SitePageRecord, 'url' | 'group' | 'sampled'>;

/** How a discovery's pages are written: `complete` false when it was cut short. */
export interface DiscoveryWrite {
  complete: boolean;
}

/** What a discovery changed: pages new (or back after being gone), and pages no longer found. */
export interface PagesChange {
  added: string[];
  gone: string[];
}

/** An organisation's sites and their pages. */
export interface SitesStore {
  /** DuplicateError: the organisation has a site at that origin. */
  addSite(site: NewSite): Promise<SiteRecord>;
  /** The organisation's site with that id (another's, or an id of no site: null). */
  findSite(userId: string, id: string): Promise<SiteRecord | null>;
  findSiteByOrigin(userId: string, origin: string): Promise<SiteRecord | null>;
  /** An organisation's sites by origin; every organisation's without one (a scheduler's view). */
  listSites(userId?: string): Promise<SiteRecord[]>;
  setSiteSettings(siteId: string, settings: SiteSettings): Promise<void>;
  /** Replaces the site's budgets and its groups' (both whole). */
  setSiteBudgets(siteId: string, budgets: SiteBudgets): Promise<void>;
  setSiteDiscovery(siteId: string, state: SiteDiscoveryState): Promise<void>;
  /** Records that `tick` of its schedule is handled; false when it (or a later one) already was. */
  markSiteScheduled(siteId: string, tick: Date): Promise<boolean>;
  /** Removes the organisation's site and its pages; false when it has no such site. */
  removeSite(userId: string, id: string): Promise<boolean>;
  /**
   * A discovery's pages replace the site's: those found are current (their group and sample as
   * given). After a complete discovery (the default), those not found are gone from `at` on (and
   * no longer sampled) and those already gone before are deleted; after an incomplete one (cut
   * short: see pagesAfterDiscovery), pages not found stay as they were.
   */
  replaceSitePages(siteId: string, found: readonly FoundPage[], at: Date, how?: DiscoveryWrite): Promise<PagesChange>;
  /** A site's pages, gone ones too, by URL. */
  listSitePages(siteId: string): Promise<SitePageRecord[]>;
}

/** A site without budgets has these: none (a new object each time). */
const noBudgets = (): Budgets => ({ budgets: {}, maxRegression: {} });

/** A new site's record: what it was given, no budgets unless given, its id and when. */
export const newSiteRecord = (site: NewSite, id: string, createdAt: Date): SiteRecord => ({
  ...site,
  include: [...site.include],
  exclude: [...site.exclude],
  groupPatterns: [...site.groupPatterns],
  locations: [...site.locations],
  devices: site.devices ? [...site.devices] : null,
  budgets: site.budgets ?? noBudgets(),
  groupBudgets: { ...site.groupBudgets },
  lastDiscovery: null,
  scheduledThrough: null,
  id,
  createdAt,
});

/**
 * The rule both backends share: the site's pages after a discovery that found `found` at `at`
 * (the first of a URL found twice counts), and what changed. Every page written back is one
 * whose record changed. A complete discovery marks the pages it did not find gone and deletes
 * (`pruned`) those gone before it: a site keeps its current pages and the last discovery's gone
 * ones, so a site serving fresh URLs each time does not pile up rows. An incomplete one (a
 * sitemap not read, a bound, the time) did not look everywhere: pages it did not find stay.
 */
export function pagesAfterDiscovery(
  existing: readonly SitePageRecord[],
  found: readonly FoundPage[],
  siteId: string,
  at: Date,
  { complete }: DiscoveryWrite = { complete: true },
): { pages: SitePageRecord[]; pruned: string[]; change: PagesChange } {
  const before = new Map(existing.map((page) => [page.url, page]));
  const seen = new Map<string, FoundPage>();
  for (const page of found) if (!seen.has(page.url)) seen.set(page.url, page);
  const pages: SitePageRecord[] = [];
  const pruned: string[] = [];
  const change: PagesChange = { added: [], gone: [] };
  for (const { url, group, sampled } of seen.values()) {
    const old = before.get(url);
    if (!old || old.goneAt !== null) change.added.push(url);
    pages.push({ siteId, url, group, sampled, firstSeenAt: old?.firstSeenAt ?? at, lastSeenAt: at, goneAt: null });
  }
  for (const old of complete ? existing : [])
    if (seen.has(old.url)) continue;
    else if (old.goneAt !== null) pruned.push(old.url);
    else {
      change.gone.push(old.url);
      pages.push({ ...old, sampled: false, goneAt: at });
    }
  change.added.sort();
  change.gone.sort();
  return { pages, pruned, change };
}

/**
 * Group budgets as both backends keep them: a list of entries, not an object keyed by template,
 * since a template may hold a `.`, which a MongoDB field name should not.
 */
const groupBudgetsEntry = z.object({ group: z.string(), budgets: storedBudgetsSchema });
export const storedGroupBudgets = (groups: SiteRecord['groupBudgets']) =>
  Object.entries(groups).map(([group, budgets]) => ({ group, budgets: storedBudgets(budgets) }));

const discoveryStateSchema = z
  .object({
    at: z.string(),
    state: z.enum(['pending', 'done', 'failed']),
    added: z.number().int(),
    gone: z.number().int(),
    refused: z.number().int(),
    cut: z.array(z.string()),
    // Absent on states stored before incomplete discoveries were told apart: a `done` one marked pages gone.
    complete: z.boolean().optional(),
    reason: z.string().nullable(),
  })
  .transform(({ complete, ...state }) => ({
    ...state,
    complete: complete ?? state.state === 'done',
  })) satisfies z.ZodType<SiteDiscoveryState>;

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function siteRecords(forms: StoredForms) {
  const { id, time, structured } = forms;
  const patterns = structured(z.array(z.string()));
  const site = z.object({
    ...ownId(forms),
    userId: id,
    origin: z.string(),
    sitemap: z.string(),
    include: patterns,
    exclude: patterns,
    maxPages: z.number().int().positive(),
    sampleSize: z.number().int().positive(),
    groupPatterns: patterns,
    devices: structured(z.array(z.enum(DEVICES)).min(1))
      .nullable()
      .default(null),
    locations: structured(z.array(z.enum(LOCATIONS)).min(1)),
    defaultLocation: z.enum(LOCATIONS),
    runs: z.number().int().positive(),
    schedule: z.string().nullable().default(null),
    budgets: structured(storedBudgetsSchema).default(noBudgets),
    // Absent on sites stored before group budgets (issue 34, item 3).
    groupBudgets: structured(z.array(groupBudgetsEntry))
      .default(() => [])
      .transform((entries) => Object.fromEntries(entries.map(({ group, budgets }) => [group, budgets]))),
    // Absent on sites stored before discoveries ran (issue 34).
    lastDiscovery: structured(discoveryStateSchema).nullable().default(null),
    scheduledThrough: time.nullable().default(null),
  }) satisfies z.ZodType<SiteRecord>;
  const page = z.object({
    siteId: id,
    url: z.string(),
    group: z.string(),
    // SQLite keeps a boolean as 0 or 1.
    sampled: z.union([z.boolean(), z.number().transform((n) => n !== 0)]),
    firstSeenAt: time,
    lastSeenAt: time,
    goneAt: time.nullable().default(null),
  }) satisfies z.ZodType<SitePageRecord>;
  return { site, page };
}

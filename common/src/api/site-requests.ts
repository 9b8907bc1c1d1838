import { z } from 'zod';
import { budgetFileSchema, limitsSchema, type Budgets } from '../budgets.ts';
import { DEVICES, LOCATIONS, type Device, type Location } from '../ids.ts';
import { settingFields } from './project-requests.ts';
import { normalizeProjectUrl, once } from './request-fields.ts';

// ---- /v1/sites (issue 34) -----------------------------------------------------------------

const MAX_SITE_PAGES = 1_000;
const MAX_SAMPLE_SIZE = 20;
/** Patterns of each kind a site may have. */
const MAX_PATTERNS = 50;

/** A site's settings as a client gives them; the rules that span fields are the gateway's. */
export interface SiteSettingsGiven {
  sitemap?: string | undefined;
  include?: string[] | undefined;
  exclude?: string[] | undefined;
  maxPages?: number | undefined;
  sampleSize?: number | undefined;
  groupPatterns?: string[] | undefined;
  devices?: Device[] | undefined;
  locations?: Location[] | undefined;
  defaultLocation?: Location | undefined;
  runs?: number | undefined;
  schedule?: string | null | undefined;
}

/** A site's budgets as a PATCH gives them: each given replaces the site's whole (issue 34, item 3). */
export interface SiteBudgetsGiven {
  /** Limits every page of the site inherits. */
  budgets?: Budgets | undefined;
  /** Limits by group template (`/product/:id`), inherited by the pages of that group. */
  groupBudgets?: Record<string, Budgets> | undefined;
}

/** What a request of /v1/sites asks: the list (GET), a new site (POST), a change (PATCH), a removal (DELETE). */
export type SitesParams =
  | { action: 'list' }
  | { action: 'create'; origin: string; settings: SiteSettingsGiven }
  | { action: 'change'; id: string; changes: SiteSettingsGiven; budgets: SiteBudgetsGiven; discover: boolean }
  | { action: 'remove'; id: string };

/** `https://shop.example` for `https://Shop.example/`: scheme, host and port; null when that is not all it is. */
function originOf(text: string): { origin: string } | { refused: string } {
  const url = URL.parse(text);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    return { refused: 'origin must be an absolute http(s) URL' };
  if (url.username || url.password) return { refused: 'origin must not carry credentials (user:password@)' };
  if (url.pathname !== '/' || url.search || url.hash || /[?#]/.test(text))
    return { refused: `origin is a scheme, host and port alone, without a path or query: give ${url.origin}` };
  return { origin: url.origin };
}

const siteOrigin = z
  .string(once('origin'))
  .min(1, 'origin is required')
  .max(300, 'origin is longer than 300 characters')
  .transform((text, ctx) => {
    const parsed = originOf(text);
    if ('origin' in parsed) return parsed.origin;
    ctx.addIssue({ code: 'custom', message: parsed.refused });
    return z.NEVER;
  })
  .meta({ description: 'The site: scheme, host and port (`https://shop.example`), one site per origin.' });

const siteId = z
  .string(once('id'))
  .regex(/^[0-9a-f]{24}$/, 'id must be a site id (24 hexadecimal digits)')
  .meta({ description: "The site's id, as listed." });

/** Whether `pattern` is a URLPattern pathname, the syntax discovery and page groups match pages by. */
function isPathPattern(pattern: string): boolean {
  try {
    new URLPattern({ pathname: pattern });
    return true;
  } catch {
    return false;
  }
}

/** A path pattern: `/` and then a URLPattern pathname without spaces, `?` or `#` (`/product/:id`, `/docs/*`). */
const pathPattern = z
  .string({ error: 'a path pattern is a string' })
  .regex(/^\/[^\s?#]{0,199}$/, 'a path pattern starts with / and has no space, ? or # (200 characters at most)')
  .refine(isPathPattern, 'a path pattern is a URLPattern pathname (/product/:id, /docs/*)');

const patterns = (name: string, description: string) =>
  z
    .array(pathPattern, { error: `${name} must be an array of path patterns` })
    .max(MAX_PATTERNS, `${name} has more than ${MAX_PATTERNS} patterns`)
    .optional()
    .meta({ description });

const wholeNumber = (name: string, max: number, fallback: number) => {
  const message = `${name} is a whole number from 1 to ${max}`;
  return z
    .number({ error: `${name} must be a number` })
    .int(message)
    .min(1, message)
    .max(max, message)
    .optional()
    .meta({ description: `A whole number from 1 to ${max} (default ${fallback}).` });
};

const { crux: _crux, ...measuring } = settingFields;
const siteFields = {
  sitemap: z
    .string({ error: 'sitemap must be "discover" or a URL' })
    .max(2048, 'sitemap is longer than 2048 characters')
    .transform((text, ctx) => {
      const url = text === 'discover' ? text : normalizeProjectUrl(text);
      if (url !== null) return url;
      ctx.addIssue({ code: 'custom', message: 'sitemap must be "discover" or an absolute http(s) URL' });
      return z.NEVER;
    })
    .optional()
    .meta({
      description:
        '"discover" (default): robots.txt, then /sitemap.xml; or the URL of a sitemap (or sitemap index) on the origin.',
    }),
  include: patterns(
    'include',
    'Path patterns (URLPattern pathnames: `/blog/*`, `/product/:id`) a page must match one of; none: every page.',
  ),
  exclude: patterns('exclude', 'Path patterns a page must match none of.'),
  maxPages: wholeNumber('maxPages', MAX_SITE_PAGES, 100),
  sampleSize: wholeNumber('sampleSize', MAX_SAMPLE_SIZE, 3),
  groupPatterns: patterns(
    'groupPatterns',
    'Route templates (`/product/:id`) that group pages, before those inferred from the URLs.',
  ),
  ...measuring,
};
const SETTING_NAMES = Object.keys(siteFields) as (keyof SiteSettingsGiven)[];

/**
 * A site's budgets (PATCH only): the site's own and its groups', each the shape of a project's
 * budgets. A group is named by its template in the syntax of groupPatterns, whether or not a
 * discovery has found such a group yet: budgets may be set ahead of the pages they will hold.
 */
const budgetFields = {
  budgets: budgetFileSchema.optional().meta({
    description:
      "Budgets every page of the site inherits ({budgets, maxRegression}, as a project's). Given: the site's are replaced.",
  }),
  groupBudgets: z
    .record(pathPattern, budgetFileSchema, {
      error: (issue) =>
        issue.code === 'invalid_key'
          ? 'a group template is a path pattern (/product/:id) starting with /'
          : 'groupBudgets must be an object of budgets by group template',
    })
    .refine((groups) => Object.keys(groups).length <= MAX_PATTERNS, `groupBudgets has more than ${MAX_PATTERNS} groups`)
    .optional()
    .meta({
      description:
        "Budgets by group template (`/product/:id`), inherited by that group's pages; a limit of a group wins over the site's. Given: the site's group budgets are replaced whole.",
    }),
};
const BUDGET_NAMES = Object.keys(budgetFields) as (keyof SiteBudgetsGiven)[];
const budgetsOf = (value: SiteBudgetsGiven): SiteBudgetsGiven =>
  Object.fromEntries(BUDGET_NAMES.filter((name) => value[name] !== undefined).map((name) => [name, value[name]]));
const settingsOf = (value: SiteSettingsGiven): SiteSettingsGiven =>
  Object.fromEntries(SETTING_NAMES.filter((name) => value[name] !== undefined).map((name) => [name, value[name]]));

/** No parameters: the organisation's sites. */
export const sitesQuerySchema = z.strictObject({}).transform((): SitesParams => ({ action: 'list' }));
/** POST: a new site at `origin` with its settings. */
export const sitesBodySchema = z
  .strictObject({ origin: siteOrigin, ...siteFields })
  .transform(({ origin, ...rest }): SitesParams => ({ action: 'create', origin, settings: settingsOf(rest) }));
/** PATCH: a site's settings to change, named by its id (its origin names it, so stays). */
export const sitePatchSchema = z
  .strictObject({
    id: siteId,
    ...siteFields,
    ...budgetFields,
    discover: z
      .literal(true, { error: 'discover must be true' })
      .optional()
      .meta({ description: "true: discover the site's pages again now (in the background; see lastDiscovery)." }),
  })
  .superRefine((value, ctx) => {
    const changes = Object.keys({ ...settingsOf(value), ...budgetsOf(value) });
    if (changes.length === 0 && value.discover !== true)
      ctx.addIssue({
        code: 'custom',
        message: `give at least one of ${[...SETTING_NAMES, ...BUDGET_NAMES].join(', ')} to change, or discover: true`,
      });
  })
  .transform(({ id, discover, ...rest }): SitesParams => ({
    action: 'change',
    id,
    changes: settingsOf(rest),
    budgets: budgetsOf(rest),
    discover: discover === true,
  }));
/** DELETE: the site to remove, with its pages. */
export const siteDeleteSchema = z
  .strictObject({ id: siteId })
  .transform(({ id }): SitesParams => ({ action: 'remove', id }));

const budgetsViewSchema = z.object({
  budgets: limitsSchema('budgets'),
  maxRegression: limitsSchema('maxRegression'),
});

/**
 * A site as the API shows it. A `ci` token is shown no `include`, `exclude`, `groupPatterns`,
 * `groupBudgets` or `lastDiscovery`: they tell of pages beyond its projects (sites-route.ts).
 */
const siteViewSchema = z
  .object({
    id: z.string(),
    origin: z.string(),
    sitemap: z.string(),
    include: z.array(z.string()).optional(),
    exclude: z.array(z.string()).optional(),
    maxPages: z.number().int(),
    sampleSize: z.number().int(),
    groupPatterns: z.array(z.string()).optional(),
    devices: z.array(z.enum(DEVICES)).meta({ description: 'Devices its pages are measured on.' }),
    locations: z.array(z.enum(LOCATIONS)),
    defaultLocation: z.enum(LOCATIONS),
    runs: z.number().int(),
    schedule: z
      .string()
      .nullable()
      .meta({ description: 'Cron expression (UTC) of its discovery and measuring, or null.' }),
    budgets: budgetsViewSchema.meta({
      description:
        "Budgets every page of the site inherits. A page is held, key by key, to the most specific limit: its project's own, else its group's, else these.",
    }),
    groupBudgets: z.record(z.string(), budgetsViewSchema).optional().meta({
      description:
        "Budgets by group template (`/product/:id`), inherited by that group's pages over the site's; none: {}.",
    }),
    createdAt: z.iso.datetime(),
    lastDiscovery: z
      .object({
        at: z.iso.datetime(),
        state: z.enum(['pending', 'done', 'failed']),
        added: z.number().int(),
        gone: z.number().int(),
        refused: z.number().int(),
        cut: z.array(z.string()),
        complete: z.boolean().meta({
          description:
            'Whether it read everything (nothing cut it, every sitemap answered): only a complete discovery marks pages not found gone; an incomplete one keeps them and their projects.',
        }),
        reason: z.string().nullable(),
      })
      .nullable()
      .optional()
      .meta({
        description:
          'Its last discovery: `pending` while it runs, `done` with the pages added and gone, the URLs refused, the bounds that cut it and whether it was complete, or `failed` with its reason; null: none yet.',
      }),
  })
  .meta({ id: 'Site' });
export type SiteView = z.infer<typeof siteViewSchema>;

/** GET: the organisation's sites, by origin. */
export const siteListSchema = z.object({ sites: z.array(siteViewSchema) }).meta({ id: 'SiteList' });
/** POST and PATCH: the site as it is now. */
export const siteChangedSchema = z.object({ site: siteViewSchema, created: z.boolean() }).meta({ id: 'SiteChanged' });
/** DELETE: that it was removed. */
export const siteRemovedSchema = z.object({ id: z.string(), removed: z.literal(true) }).meta({ id: 'SiteRemoved' });

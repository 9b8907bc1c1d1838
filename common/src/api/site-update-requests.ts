import { z } from 'zod';
import { DEVICES, LOCATIONS, type Device } from '../ids.ts';
import { normalizeProjectUrl, once, parsedString } from './request-fields.ts';
import { revisionBodyFields, revisionQueryFields } from './revision-fields.ts';

// ---- /v1/sites/{id}/update (issue 34) -----------------------------------------------------

/** Pages one site update may name: a site has at most this many (site-requests.ts MAX_SITE_PAGES). */
const MAX_SITE_UPDATE_PAGES = 1_000;

/** What a site update asks, GET or POST alike. */
export interface SiteUpdateRequest {
  /** Absent: the site's sampled pages (or every page with `all`). */
  pages?: string[] | undefined;
  all: boolean;
  devices?: Device[] | undefined;
  planOnly: boolean;
  updateType: 'manual' | 'ci';
  commit?: string | undefined;
  branch?: string | undefined;
  pullRequest?: number | undefined;
}

/** The site named by the path. */
export const siteUpdateParamsSchema = z.strictObject({
  id: z
    .string()
    .regex(/^[0-9a-f]{24}$/, 'id must be a site id (24 hexadecimal digits)')
    .meta({ description: "The site's id, as /v1/sites lists it." }),
});

const PAGE_MESSAGE = 'pages must be absolute http(s) URLs of the site';
const pageUrl = parsedString(
  z.string({ error: PAGE_MESSAGE }).min(1, PAGE_MESSAGE).max(2048, 'a page URL is longer than 2048 characters'),
  normalizeProjectUrl,
  PAGE_MESSAGE,
);
const pageList = z
  .array(pageUrl, { error: 'pages must be an array of page URLs' })
  .min(1, 'pages must not be empty')
  .max(MAX_SITE_UPDATE_PAGES, `pages has more than ${MAX_SITE_UPDATE_PAGES} URLs`);
const deviceList = z
  .array(z.enum(DEVICES, { error: 'devices must be mobile or desktop' }), {
    error: 'devices must be an array of mobile, desktop',
  })
  .min(1, 'devices must not be empty')
  .max(DEVICES.length, 'devices names a device twice');
/** A query string repeats a parameter for a list, or gives it once. */
const repeated = <T extends z.ZodType>(list: T) =>
  z.preprocess((value) => (typeof value === 'string' ? [value] : value), list);
const flag = (name: string) =>
  parsedString(
    z.string(once(name)),
    (text) => (text === 'true' ? true : text === 'false' ? false : null),
    `${name} must be true or false`,
  );

const say = {
  pages: `Page URLs of the site to measure (${MAX_SITE_UPDATE_PAGES} at most); omitted: its sampled pages. Repeat the parameter in GET.`,
  all: 'true: every current page of the site (not with pages).',
  devices: "Devices to measure; omitted: the site's.",
  planOnly: 'true: answer the plan and queue nothing.',
  updateType: 'ci marks updates started by a CI pipeline.',
};
const revision = {
  commit: "The commit measured, stored with each page's snapshot.",
  branch: 'The branch measured.',
  pullRequest: 'The pull or merge request measured (its number).',
};
const updateType = z
  .enum(['manual', 'ci'], { error: 'updateType must be manual or ci' })
  .default('manual')
  .meta({ description: say.updateType });

const noPagesWithAll = (value: { pages?: unknown; all?: boolean | undefined }, ctx: z.RefinementCtx) => {
  if (value.pages !== undefined && value.all === true)
    ctx.addIssue({ code: 'custom', message: 'give pages or all, not both', path: ['all'] });
};
const toRequest = ({
  all,
  planOnly,
  ...rest
}: Omit<SiteUpdateRequest, 'all' | 'planOnly'> & { all?: boolean | undefined; planOnly?: boolean | undefined }) =>
  ({ ...rest, all: all === true, planOnly: planOnly === true }) as SiteUpdateRequest;

/** GET: the same parameters as text; `pages` and `devices` repeated. */
export const siteUpdateQuerySchema = z
  .strictObject({
    pages: repeated(pageList).optional().meta({ description: say.pages }),
    all: flag('all').optional().meta({ description: say.all }),
    devices: repeated(deviceList).optional().meta({ description: say.devices }),
    planOnly: flag('planOnly').optional().meta({ description: say.planOnly }),
    updateType,
    ...revisionQueryFields(revision),
  })
  .superRefine(noPagesWithAll)
  .transform(toRequest);

/** POST: the pages to measure (default the sampled ones), the devices, whether only to plan. */
export const siteUpdateBodySchema = z
  .strictObject({
    pages: pageList.optional().meta({ description: say.pages }),
    all: z.boolean({ error: 'all must be true or false' }).optional().meta({ description: say.all }),
    devices: deviceList.optional().meta({ description: say.devices }),
    planOnly: z.boolean({ error: 'planOnly must be true or false' }).optional().meta({ description: say.planOnly }),
    updateType,
    ...revisionBodyFields(revision),
  })
  .superRefine(noPagesWithAll)
  .transform(toRequest);

const count = (description: string) => z.number().int().nonnegative().meta({ description });

/** What a site update costs, answered before anything is queued. */
const siteUpdatePlanSchema = z
  .object({
    pages: count('Pages to measure.'),
    devices: z.array(z.enum(DEVICES)),
    locations: z.array(z.enum(LOCATIONS)),
    runs: count('Lighthouse runs per page, device and location.'),
    audits: count('Runs in all: pages × devices × locations × runs.'),
    queuedRuns: count('Runs the caller already has waiting.'),
    limit: count('Runs a caller may have waiting (queuedRunsPerUser); queuedRuns + audits above it: refused (429).'),
  })
  .meta({ id: 'SiteUpdatePlan' });
export type SiteUpdatePlan = z.infer<typeof siteUpdatePlanSchema>;

/** The answer: the plan, and the site update's id unless only the plan was asked. */
export const siteUpdateAnswerSchema = z
  .object({
    ok: z.literal(1),
    id: z
      .string()
      .nullable()
      .meta({ description: 'The site update, for /v1/updates/{id}; null with planOnly (nothing queued).' }),
    plan: siteUpdatePlanSchema,
  })
  .meta({ id: 'SiteUpdateAccepted' });
export type SiteUpdateAnswer = z.infer<typeof siteUpdateAnswerSchema>;

const SITE_UPDATE_STATES = ['queued', 'running', 'done', 'failed'] as const;

const sitePageStatusSchema = z
  .object({
    url: z.string(),
    updateId: z
      .string()
      .nullable()
      .meta({ description: "The page's own async update; null: it could not be admitted (see reason)." }),
    status: z.enum(SITE_UPDATE_STATES),
    budgetFailures: z
      .number()
      .int()
      .nullable()
      .meta({ description: "Failing budget checks of the page's new snapshots; null until done." }),
    score: z
      .number()
      .nullable()
      .meta({ description: 'Performance score (0 to 100) of its snapshot; null until done.' }),
    lcp: z.number().nullable().meta({ description: 'Largest Contentful Paint, ms; null until done.' }),
    reason: z.string().nullable().meta({ description: 'Why it failed; null otherwise.' }),
  })
  .meta({ id: 'SiteUpdatePage' });
export type SiteUpdatePageStatus = z.infer<typeof sitePageStatusSchema>;

/** `/v1/updates/{id}` of a site update: its pages' progress. */
export const siteUpdateStatusSchema = z
  .object({
    id: z.string(),
    kind: z.literal('site'),
    siteId: z.string(),
    origin: z.string(),
    status: z.enum(SITE_UPDATE_STATES).meta({
      description: 'queued → running → done once every page ended; failed when any page failed.',
    }),
    createdAt: z.iso.datetime(),
    finishedAt: z.iso.datetime().nullable(),
    progress: z.object({ pages: count('Pages in all.'), done: count('Pages done.'), failed: count('Pages failed.') }),
    budgetFailures: count("Failing budget checks summed over the pages' new snapshots."),
    pages: z.array(sitePageStatusSchema),
  })
  .meta({ id: 'SiteUpdateStatus' });
export type SiteUpdateStatusView = z.infer<typeof siteUpdateStatusSchema>;

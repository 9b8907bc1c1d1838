import type { Request } from 'express';
import { z } from 'zod';
import {
  ApiError,
  budgetKeyList,
  limitsSchema,
  DEVICES,
  pageAuthSchema,
  type Budgets,
  type PageAuth,
  LOCATIONS,
  parseApiDate,
  parseApiDateTime,
  SECTIONS,
  UPDATE_MODES,
  type Device,
  type Location,
  type Section,
} from '@perfwatch/common';

/**
 * Request parameters. Each endpoint has one schema for its query string (GET) and one for its
 * JSON body (POST), built from the same field schemas and giving the same typed request, so
 * GET and POST cannot drift apart. Unknown parameters are refused: a misspelt `devices=mobile`
 * silently running both devices would cost minutes.
 */

export const MAX_OVERVIEW_DAYS = 400;

export function normalizeProjectUrl(text: string): string | null {
  const url = URL.parse(text);
  return url?.protocol === 'http:' || url?.protocol === 'https:' ? url.href : null;
}

const once = (name: string) => ({
  error: (issue: { input: unknown }) =>
    Array.isArray(issue.input)
      ? `${name} is given more than once`
      : issue.input === undefined
        ? `${name} is required`
        : `${name} must be a string`,
});

/** A string parameter given once, turned into a value by `parse`; null from `parse` is `message`. */
function parsedString<T>(base: z.ZodString, parse: (text: string) => T | null, message: string) {
  return base.transform((text, ctx) => {
    const value = parse(text);
    if (value === null) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return value;
  });
}

const projectUrl = parsedString(
  z.string(once('url')).min(1, 'url is required').max(2048, 'url is longer than 2048 characters'),
  normalizeProjectUrl,
  'url must be an absolute http(s) URL',
).meta({ description: 'The project URL (URL-encoded in a query string).', example: 'https://shop.example/' });

/** One of `values`; anything else is refused by naming them. */
const oneOf = <const V extends readonly [string, ...string[]]>(name: string, values: V) =>
  z.enum(values, { error: `${name} must be one of ${values.join(', ')}` });

const device = oneOf('device', DEVICES).meta({ description: 'Device class; omitted: all.' });

/** One value, the parameter repeated (GET), or a JSON array (POST). */
function oneOrMany<T extends z.ZodType>(item: T, name: string) {
  return z.union(
    [
      item.transform((v) => [v] as Array<z.output<T>>),
      z.array(item).min(1, `${name} must not be empty`).max(20, `${name} has too many values`),
    ],
    {
      error: `${name} must be one or more of the allowed values`,
    },
  );
}

const location = oneOf('location', LOCATIONS);
const locations = oneOrMany(location, 'location').meta({
  description: 'Location filter; repeat the parameter in GET, a JSON array in POST.',
});
const section = oneOf('section', SECTIONS);
const sections = oneOrMany(section, 'sections').meta({
  description: 'Section filter; repeat `section` (or `sections`) in GET, a JSON array in POST.',
});

const dateTime = (name: string) =>
  parsedString(
    z.string(once(name)),
    parseApiDateTime,
    `${name} must be a UTC date-time yyyy-MM-dd'T'HH:mm:ss (a trailing Z or milliseconds are accepted)`,
  ).meta({ example: '2026-11-22T11:18:40' });

const dateOnly = (name: string) =>
  parsedString(z.string(once(name)), parseApiDate, `${name} must be a UTC date yyyy-MM-dd`).meta({
    example: '2026-11-01',
  });

/** A bare host name, or a URL whose host is taken. */
function hostOf(text: string): string | null {
  return URL.parse(/^https?:\/\//i.test(text) ? text : `http://${text}`)?.hostname || null;
}

const domain = parsedString(
  z.string(once('domain')).min(1, 'domain must not be empty').max(253, 'domain is too long'),
  hostOf,
  'domain must be a host name such as shop.example',
).meta({ description: 'Domain filter.', example: 'shop.example' });

export const updateTypeFilter = oneOf('updateType', ['manual', 'scheduled', 'ci']);

// ---- /v1/update -------------------------------------------------------------------------

const updateFields = {
  url: projectUrl,
  device: device.optional(),
  mode: z
    .enum(UPDATE_MODES, { error: 'mode must be sync or async' })
    .default('sync')
    .meta({ description: 'sync (default) waits for the result; async returns {ok: 1, id} at once.' }),
  updateType: z
    .enum(['manual', 'ci'], { error: 'updateType must be manual or ci' })
    .default('manual')
    .meta({ description: 'ci marks updates started by a CI pipeline.' }),
};
export const updateQuerySchema = z.strictObject(updateFields);
export const updateBodySchema = z.strictObject(updateFields);
export type UpdateParams = z.output<typeof updateQuerySchema>;

// ---- /v1/audit --------------------------------------------------------------------------

const auditFields = {
  url: projectUrl,
  date: dateTime('date').meta({ description: 'Snapshot date, UTC.' }),
  device: device.optional(),
  location: locations.optional(),
};
export const auditQuerySchema = z.strictObject(auditFields);
export const auditBodySchema = z.strictObject(auditFields);
export type AuditParams = z.output<typeof auditQuerySchema>;

// ---- /v1/compare ------------------------------------------------------------------------

const compareFields = {
  url: projectUrl,
  from: dateTime('from').meta({
    description: "The earlier snapshot's date, UTC (any two dates: `to` may be the earlier one).",
  }),
  to: dateTime('to').meta({ description: "The other snapshot's date, UTC." }),
  device: device.optional(),
  location: locations.optional(),
};
export const compareQuerySchema = z.strictObject(compareFields);
export const compareBodySchema = z.strictObject(compareFields);

// ---- /v1/budgets ------------------------------------------------------------------------

export interface BudgetsParams {
  url: string;
  /** Present: the project's budgets are replaced by these. */
  set?: Budgets;
}

const replaced = ({
  url,
  budgets,
  maxRegression,
}: {
  url: string;
  budgets?: Budgets['budgets'] | undefined;
  maxRegression?: Budgets['maxRegression'] | undefined;
}): BudgetsParams =>
  budgets === undefined && maxRegression === undefined
    ? { url }
    : { url, set: { budgets: budgets ?? {}, maxRegression: maxRegression ?? {} } };

/** GET reads a project's budgets; they change by POST only. */
export const budgetsQuerySchema = z.strictObject({ url: projectUrl }).transform(({ url }): BudgetsParams => ({ url }));
/** Parameters that change budgets: refused in a GET (parseRequest's `writes`). */
export const BUDGETS_WRITES = ['budget', 'budgets', 'maxRegression'] as const;
export const budgetsBodySchema = z
  .strictObject({
    url: projectUrl,
    budgets: limitsSchema('budgets')
      .optional()
      .meta({
        description: `Limits by key (${budgetKeyList}): score floors 0–100, metric ceilings in ms, bytes, or unitless for cls. Given (or maxRegression given): the project's budgets are replaced.`,
      }),
    maxRegression: limitsSchema('maxRegression').optional().meta({
      description: 'Allowed regressions against the previous snapshot, by key: score points, or percent for metrics.',
    }),
  })
  .transform(replaced);

// ---- /v1/webhooks -----------------------------------------------------------------------

/** What to do, and which page of the caller's webhooks the answer lists. */
export type WebhooksParams = (
  | { action: 'list' }
  | { action: 'add'; targetUrl: string; project: string | null; format: 'json' | 'slack' }
  | { action: 'remove'; id: string }
) & { page: { after?: string; limit?: number } };

const webhookId = /^[0-9a-f]{24}$/;
/** Webhooks a page of `/v1/webhooks` lists by default, and at most. */
export const WEBHOOK_PAGE = { default: 20, max: 100 } as const;
const pageLimit = `limit must be a whole number from 1 to ${WEBHOOK_PAGE.max}`;

const webhookFields = {
  targetUrl: z.string(once('targetUrl')).min(1).max(2048, 'targetUrl is longer than 2048 characters').optional().meta({
    description:
      "Adds a webhook posting to this https URL (a public address, unless the gateway's PERFWATCH_ALLOW_TARGETS allows it; plain http only to addresses it lists). Refused past the gateway's WEBHOOK_MAX_PER_USER.",
  }),
  project: projectUrl
    .optional()
    .meta({ description: "With targetUrl: only this project's events; omitted: every project of yours." }),
  format: z.enum(['json', 'slack'], { error: 'format must be json or slack' }).optional().meta({
    description: "With targetUrl: json (the signed payload, default) or slack (Slack's incoming-webhook message).",
  }),
  remove: z
    .string(once('remove'))
    .regex(webhookId, 'remove must be a webhook id as listed')
    .optional()
    .meta({ description: 'Removes the webhook with this id, with its deliveries.' }),
  after: z
    .string(once('after'))
    .regex(webhookId, 'after must be a webhook id, as `next` gave it')
    .optional()
    .meta({ description: 'Lists the webhooks after this one: the `next` of the page before.' }),
  limit: z.coerce
    .number({ error: pageLimit })
    .int(pageLimit)
    .min(1, pageLimit)
    .max(WEBHOOK_PAGE.max, pageLimit)
    .optional()
    .meta({
      description: `Webhooks in the page, oldest first; ${WEBHOOK_PAGE.default} by default, ${WEBHOOK_PAGE.max} at most.`,
    }),
};

function webhookAction(
  {
    targetUrl,
    project,
    format,
    remove,
    after,
    limit,
  }: {
    targetUrl?: string | undefined;
    project?: string | undefined;
    format?: 'json' | 'slack' | undefined;
    remove?: string | undefined;
    after?: string | undefined;
    limit?: number | undefined;
  },
  ctx: z.RefinementCtx,
): WebhooksParams {
  const page = { ...(after !== undefined ? { after } : {}), ...(limit !== undefined ? { limit } : {}) };
  if (remove !== undefined) {
    if (targetUrl !== undefined || project !== undefined || format !== undefined)
      ctx.addIssue({ code: 'custom', message: 'remove takes no other parameter' });
    return { action: 'remove', id: remove, page };
  }
  if (targetUrl === undefined) {
    if (project !== undefined || format !== undefined)
      ctx.addIssue({ code: 'custom', message: 'project and format go with targetUrl' });
    return { action: 'list', page };
  }
  return { action: 'add', targetUrl, project: project ?? null, format: format ?? 'json', page };
}
/** GET lists; a webhook is added or removed by POST only. */
export const webhooksQuerySchema = z
  .strictObject({ after: webhookFields.after, limit: webhookFields.limit })
  .transform(webhookAction);
export const WEBHOOKS_WRITES = ['targetUrl', 'project', 'format', 'remove'] as const;
export const webhooksBodySchema = z.strictObject(webhookFields).transform(webhookAction);

// ---- /v1/annotations --------------------------------------------------------------------

export const MAX_ANNOTATION_TEXT = 500;
/** Annotations one project may have, and a listing's page at most (and by default). */
export const MAX_ANNOTATIONS_PER_PROJECT = 1_000;
const annotationId = /^[A-Za-z0-9_-]{1,64}$/;
const annotationFields = {
  url: projectUrl,
  text: z
    .string(once('text'))
    .trim()
    .min(1, 'text must not be empty')
    .max(MAX_ANNOTATION_TEXT, `text is longer than ${MAX_ANNOTATION_TEXT} characters`)
    .optional()
    .meta({
      description:
        "Adds an annotation (a deploy marker) with this text; omitted: the project's annotations are listed.",
    }),
  date: dateTime('date').optional().meta({ description: 'With text: when it happened, UTC; omitted: now.' }),
  link: parsedString(
    z.string(once('link')).max(2048, 'link is longer than 2048 characters'),
    normalizeProjectUrl,
    'link must be an absolute http(s) URL',
  )
    .optional()
    .meta({ description: 'With text: a URL to go with it (a release, a pull request).' }),
  from: dateTime('from').optional().meta({ description: 'Listing: only annotations at or after this date-time.' }),
  to: dateTime('to')
    .optional()
    .meta({ description: 'Listing: only annotations before this date-time (the `next` of the page after this one).' }),
  limit: z.coerce
    .number({ error: `limit must be a whole number from 1 to ${MAX_ANNOTATIONS_PER_PROJECT}` })
    .int(`limit must be a whole number from 1 to ${MAX_ANNOTATIONS_PER_PROJECT}`)
    .min(1, `limit must be a whole number from 1 to ${MAX_ANNOTATIONS_PER_PROJECT}`)
    .max(MAX_ANNOTATIONS_PER_PROJECT, `limit must be a whole number from 1 to ${MAX_ANNOTATIONS_PER_PROJECT}`)
    .optional()
    .meta({
      description: `Listing: the newest this many annotations in the range (${MAX_ANNOTATIONS_PER_PROJECT} at most and by default); \`next\` says where the older ones go on.`,
    }),
  remove: z
    .string(once('remove'))
    .regex(annotationId, 'remove must be an annotation id')
    .optional()
    .meta({ description: 'POST: removes the annotation of this id.' }),
};

export type AnnotationsParams = {
  url: string;
  add: { text: string; date?: Date | undefined; link?: string | undefined } | null;
  remove: string | null;
  from?: Date | undefined;
  to?: Date | undefined;
  limit: number;
};

function annotationAction(
  {
    url,
    text,
    date,
    link,
    from,
    to,
    limit,
    remove,
  }: {
    url: string;
    text?: string | undefined;
    date?: Date | undefined;
    link?: string | undefined;
    from?: Date | undefined;
    to?: Date | undefined;
    limit?: number | undefined;
    remove?: string | undefined;
  },
  ctx: z.RefinementCtx,
): AnnotationsParams {
  if (text === undefined && (date !== undefined || link !== undefined))
    ctx.addIssue({ code: 'custom', message: 'date and link go with text' });
  if (remove !== undefined && text !== undefined)
    ctx.addIssue({ code: 'custom', message: 'remove and text do not go together' });
  return {
    url,
    add: text === undefined ? null : { text, date, link },
    remove: remove ?? null,
    from,
    to,
    limit: limit ?? MAX_ANNOTATIONS_PER_PROJECT,
  };
}
/** GET lists; an annotation is added by POST only. */
export const annotationsQuerySchema = z
  .strictObject({
    url: annotationFields.url,
    from: annotationFields.from,
    to: annotationFields.to,
    limit: annotationFields.limit,
  })
  .transform(annotationAction);
export const ANNOTATIONS_WRITES = ['text', 'date', 'link', 'remove'] as const;
export const annotationsBodySchema = z.strictObject(annotationFields).transform(annotationAction);

// ---- /v1/credentials ---------------------------------------------------------------------

export type CredentialsParams = { url: string; set?: PageAuth; clear: boolean };

/** GET reads; credentials change by POST only (and secrets never travel in a URL, where access logs and proxies keep them). */
export const credentialsQuerySchema = z
  .strictObject({ url: projectUrl })
  .transform(({ url }): CredentialsParams => ({ url, clear: false }));
export const CREDENTIALS_WRITES = ['auth', 'clear'] as const;
export const credentialsBodySchema = z
  .strictObject({
    url: projectUrl,
    auth: pageAuthSchema.optional().meta({
      description:
        'Replaces the credentials: cookies [{name, value}], headers {name: value}, login steps [{action: goto|fill|click|waitFor, …}]. POST only.',
    }),
    clear: z
      .boolean({ error: 'clear must be true or false' })
      .optional()
      .meta({ description: "true: forget the project's credentials." }),
  })
  .superRefine((value, ctx) => {
    if (value.auth && value.clear) ctx.addIssue({ code: 'custom', message: 'auth and clear do not go together' });
  })
  .transform(({ url, auth, clear }): CredentialsParams => ({
    url,
    clear: clear ?? false,
    ...(auth ? { set: auth } : {}),
  }));

// ---- /v1/updates ------------------------------------------------------------------------

/** Snapshots a page of `/v1/updates` lists at most. */
export const MAX_UPDATES_PAGE = 1_000;
export const updatesQuerySchema = z.strictObject({
  url: projectUrl,
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_UPDATES_PAGE)
    .optional()
    .meta({
      description: `Snapshots in the page, newest of them first taken; ${MAX_UPDATES_PAGE} at most and by default.`,
    }),
  before: dateTime('before')
    .optional()
    .meta({ description: 'Only snapshots strictly older than this date-time: the `next` of the page after this one.' }),
});
export const updatesBodySchema = updatesQuerySchema;

// ---- /v1/projects -----------------------------------------------------------------------

/** No parameters: the caller's projects. */
export const projectsQuerySchema = z.strictObject({});
export const projectsBodySchema = projectsQuerySchema;

// ---- /v1/updates/{id} ---------------------------------------------------------------------

export const updateIdParamsSchema = z.strictObject({
  id: z
    .string()
    .regex(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      'id must be an update id as /v1/update?mode=async returned it',
    )
    .meta({ description: 'The id /v1/update?mode=async answered with.' }),
});
/** Nothing besides the id, which is in the path. */
export const updateStatusQuerySchema = z.strictObject({});
export const updateStatusBodySchema = updateStatusQuerySchema;

// ---- /v1/overview -----------------------------------------------------------------------

export interface OverviewParams {
  startDate: Date;
  endDate: Date;
  domain?: string;
  updateType?: 'manual' | 'scheduled' | 'ci';
  sections?: Section[];
}

function checkRange<T extends { startDate: Date; endDate: Date }>(value: T, ctx: z.RefinementCtx): void {
  if (value.endDate < value.startDate)
    ctx.addIssue({ code: 'custom', message: 'endDate is before startDate', path: ['endDate'] });
  else if ((value.endDate.getTime() - value.startDate.getTime()) / 86_400_000 + 1 > MAX_OVERVIEW_DAYS) {
    ctx.addIssue({ code: 'custom', message: `the range is longer than ${MAX_OVERVIEW_DAYS} days`, path: ['endDate'] });
  }
}

export const overviewQuerySchema = z
  .strictObject({
    startDate: dateOnly('startDate'),
    endDate: dateOnly('endDate'),
    domain: domain.optional(),
    updateType: updateTypeFilter.optional(),
    section: sections.optional(),
    sections: sections.optional(),
  })
  .superRefine(checkRange)
  .transform(({ section: one, sections: many, ...rest }): OverviewParams => {
    const all = [...(one ?? []), ...(many ?? [])];
    return { ...rest, sections: all.length > 0 ? [...new Set(all)] : undefined };
  });

export const overviewBodySchema = z
  .strictObject({
    dateRange: z.strictObject(
      { startDate: dateOnly('startDate'), endDate: dateOnly('endDate') },
      { error: 'dateRange must be an object {startDate, endDate}' },
    ),
    domain: domain.optional(),
    updateType: updateTypeFilter.optional(),
    sections: sections.optional(),
  })
  .superRefine((value, ctx) => checkRange(value.dateRange, ctx))
  .transform(({ dateRange, sections: s, ...rest }): OverviewParams => ({
    ...rest,
    ...dateRange,
    sections: s ? [...new Set(s)] : undefined,
  }));

// ---- parsing ----------------------------------------------------------------------------

/** Parses a request with the schema of its method; every problem becomes one line of a 400. */
export function parseRequest<Q extends z.ZodType, B extends z.ZodType>(
  req: Request,
  schemas: { query: Q; body: B; writes?: readonly string[] },
): z.output<Q> | z.output<B> {
  if (req.method !== 'POST') refuseWritesByGet(req, schemas.writes ?? []);
  if (req.method === 'POST') {
    // No body at all is an empty object (POST /v1/projects needs none); a JSON `null` is not.
    const body: unknown = req.body === undefined ? {} : req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new ApiError('BAD_REQUEST', 'The JSON body must be an object.', ['body: expected a JSON object']);
    return check(schemas.body, body);
  }
  return check(schemas.query, req.query);
}

/**
 * A GET reads. One that would change something (a budget, a webhook, an annotation,
 * credentials) is refused with 405 and `Allow: POST`, before anything is looked at: a link
 * followed by a crawler, a prefetching browser or a chat preview must never change state, and
 * a URL is what access logs and proxies keep.
 */
function refuseWritesByGet(req: Request, writes: readonly string[]): void {
  const query = req.query as Record<string, unknown>;
  const given = writes.filter((name) => Object.hasOwn(query, name));
  if (given.length === 0) return;
  throw new ApiError(
    'METHOD_NOT_ALLOWED',
    'This request changes something: send it as POST with a JSON body. GET only reads.',
    [`${given.join(', ')}: POST only`],
    { headers: { Allow: 'POST' } },
  );
}

function check<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return `unknown parameter(s): ${issue.keys.join(', ')}`;
    const path = issue.path.join('.');
    return path && !issue.message.startsWith(String(issue.path.at(-1))) ? `${path}: ${issue.message}` : issue.message;
  });
  throw new ApiError('BAD_REQUEST', 'The request has invalid parameters.', errors);
}

export type { Device, Location };

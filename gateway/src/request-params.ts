import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, DEVICES, LOCATIONS, parseApiDate, parseApiDateTime, SECTIONS, UPDATE_MODES, type Device, type Location, type Section } from '@perfwatch/common';

/**
 * Request parameters. Each endpoint has one schema for its query string (GET) and one for its
 * JSON body (POST), built from the same field schemas and giving the same typed request, so
 * GET and POST cannot drift apart. Unknown parameters are refused: a misspelt `devices=mobile`
 * silently running both devices would cost minutes.
 */

export const MAX_OVERVIEW_DAYS = 400;

export function normalizeProjectUrl(text: string): string | null {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

const once = (name: string) => ({ error: (issue: { input: unknown }) => (Array.isArray(issue.input) ? `${name} is given more than once` : issue.input === undefined ? `${name} is required` : `${name} must be a string`) });

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

const projectUrl = parsedString(z.string(once('url')).min(1, 'url is required').max(2048, 'url is longer than 2048 characters'), normalizeProjectUrl, 'url must be an absolute http(s) URL').meta({ description: 'The project URL (URL-encoded in a query string).', example: 'https://shop.example/' });

const device = z.enum(DEVICES, { error: `device must be one of ${DEVICES.join(', ')}` }).meta({ description: 'Device class; omitted: all.' });

/** One value, the parameter repeated (GET), or a JSON array (POST). */
function oneOrMany<T extends z.ZodType>(item: T, name: string) {
  return z.union([item.transform((v) => [v] as Array<z.output<T>>), z.array(item).min(1, `${name} must not be empty`).max(20, `${name} has too many values`)], {
    error: `${name} must be one or more of the allowed values`,
  });
}

const location = z.enum(LOCATIONS, { error: `location must be one of ${LOCATIONS.join(', ')}` });
const locations = oneOrMany(location, 'location').meta({ description: 'Location filter; repeat the parameter in GET, a JSON array in POST.' });
const section = z.enum(SECTIONS, { error: `section must be one of ${SECTIONS.join(', ')}` });
const sections = oneOrMany(section, 'sections').meta({ description: 'Section filter; repeat `section` (or `sections`) in GET, a JSON array in POST.' });

const dateTime = (name: string) =>
  parsedString(z.string(once(name)), parseApiDateTime, `${name} must be a UTC date-time yyyy-MM-dd'T'HH:mm:ss (a trailing Z or milliseconds are accepted)`)
    .meta({ example: '2026-11-22T11:18:40' });

const dateOnly = (name: string) =>
  parsedString(z.string(once(name)), parseApiDate, `${name} must be a UTC date yyyy-MM-dd`)
    .meta({ example: '2026-11-01' });

/** A bare host name, or a URL whose host is taken. */
function hostOf(text: string): string | null {
  try {
    const host = new URL(/^https?:\/\//i.test(text) ? text : `http://${text}`).hostname;
    return host.length > 0 ? host : null;
  } catch {
    return null;
  }
}

const domain = parsedString(z.string(once('domain')).min(1, 'domain must not be empty').max(253, 'domain is too long'), hostOf, 'domain must be a host name such as shop.example').meta({ description: 'Domain filter.', example: 'shop.example' });

export const updateTypeFilter = z.enum(['manual', 'scheduled', 'ci'], { error: 'updateType must be one of manual, scheduled, ci' });

// ---- /v1/update -------------------------------------------------------------------------

const updateFields = {
  url: projectUrl,
  device: device.optional(),
  mode: z.enum(UPDATE_MODES, { error: 'mode must be sync or async' }).default('sync').meta({ description: 'sync (default) waits for the result; async returns {ok: 1, id} at once.' }),
  updateType: z.enum(['manual', 'ci'], { error: 'updateType must be manual or ci' }).default('manual').meta({ description: 'ci marks updates started by a CI pipeline.' }),
};
export const updateQuerySchema = z.strictObject(updateFields);
export const updateBodySchema = z.strictObject(updateFields);
export type UpdateParams = z.output<typeof updateQuerySchema>;

// ---- /v1/audit --------------------------------------------------------------------------

const auditFields = { url: projectUrl, date: dateTime('date').meta({ description: 'Snapshot date, UTC.' }), device: device.optional(), location: locations.optional() };
export const auditQuerySchema = z.strictObject(auditFields);
export const auditBodySchema = z.strictObject(auditFields);
export type AuditParams = z.output<typeof auditQuerySchema>;

// ---- /v1/compare ------------------------------------------------------------------------

const compareFields = {
  url: projectUrl,
  from: dateTime('from').meta({ description: 'The earlier snapshot\'s date, UTC (any two dates: `to` may be the earlier one).' }),
  to: dateTime('to').meta({ description: 'The other snapshot\'s date, UTC.' }),
  device: device.optional(),
  location: locations.optional(),
};
export const compareQuerySchema = z.strictObject(compareFields);
export const compareBodySchema = z.strictObject(compareFields);

// ---- /v1/updates ------------------------------------------------------------------------

/** Snapshots a page of `/v1/updates` lists at most. */
export const MAX_UPDATES_PAGE = 1_000;
export const updatesQuerySchema = z.strictObject({
  url: projectUrl,
  limit: z.coerce.number().int().min(1).max(MAX_UPDATES_PAGE).optional().meta({ description: `Snapshots in the page, newest of them first taken; ${MAX_UPDATES_PAGE} at most and by default.` }),
  before: dateTime('before').optional().meta({ description: 'Only snapshots strictly older than this date-time: the `next` of the page after this one.' }),
});
export const updatesBodySchema = updatesQuerySchema;

// ---- /v1/projects -----------------------------------------------------------------------

/** No parameters: the caller's projects. */
export const projectsQuerySchema = z.strictObject({});
export const projectsBodySchema = projectsQuerySchema;

// ---- /v1/updates/{id} ---------------------------------------------------------------------

export const updateIdParamsSchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'id must be an update id as /v1/update?mode=async returned it').meta({ description: 'The id /v1/update?mode=async answered with.' }),
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
  if (value.endDate < value.startDate) ctx.addIssue({ code: 'custom', message: 'endDate is before startDate', path: ['endDate'] });
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
    dateRange: z.strictObject({ startDate: dateOnly('startDate'), endDate: dateOnly('endDate') }, { error: 'dateRange must be an object {startDate, endDate}' }),
    domain: domain.optional(),
    updateType: updateTypeFilter.optional(),
    sections: sections.optional(),
  })
  .superRefine((value, ctx) => checkRange(value.dateRange, ctx))
  .transform(({ dateRange, sections: s, ...rest }): OverviewParams => ({ ...rest, ...dateRange, sections: s ? [...new Set(s)] : undefined }));

// ---- parsing ----------------------------------------------------------------------------

/** Parses a request with the schema of its method; every problem becomes one line of a 400. */
export function parseRequest<Q extends z.ZodType, B extends z.ZodType>(req: Request, schemas: { query: Q; body: B }): z.output<Q> | z.output<B> {
  if (req.method === 'POST') {
    // No body at all is an empty object (POST /v1/projects needs none); a JSON `null` is not.
    const body: unknown = req.body === undefined ? {} : req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('BAD_REQUEST', 'The JSON body must be an object.', ['body: expected a JSON object']);
    return check(schemas.body, body);
  }
  return check(schemas.query, req.query);
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

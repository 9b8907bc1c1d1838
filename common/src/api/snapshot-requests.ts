import { z } from 'zod';
import { parseApiDateTime } from '../dates.ts';
import type { Section } from '../lighthouse-kpis.ts';
import {
  dateOnly,
  dateTime,
  device,
  locations,
  normalizeProjectUrl,
  once,
  oneOf,
  parsedString,
  projectUrl,
  sections,
} from './request-fields.ts';
import { revisionBodyFields, revisionQueryFields } from './revision-fields.ts';

// ---- /v1/audit --------------------------------------------------------------------------

const auditFields = {
  url: projectUrl,
  date: dateTime('date').meta({ description: 'Snapshot date, UTC.' }),
  device: device.optional(),
  location: locations.optional(),
};
export const auditQuerySchema = z.strictObject(auditFields);
export const auditBodySchema = z.strictObject(auditFields);

// ---- /v1/compare ------------------------------------------------------------------------

/** A side of a comparison named by its snapshot's date, or `latest` (compare-route.ts says which). */
const LATEST = 'latest';
const DATE_TIME_OR_LATEST =
  "a UTC date-time yyyy-MM-dd'T'HH:mm:ss (a trailing Z or milliseconds are accepted) or latest";

const snapshotSide = (name: string, description: string) =>
  parsedString(
    z.string(once(name)),
    (text): Date | typeof LATEST | null => (text === LATEST ? LATEST : parseApiDateTime(text)),
    `${name} must be ${DATE_TIME_OR_LATEST}`,
  ).meta({ description, example: '2026-11-22T11:18:40' });

const baseUrl = parsedString(
  z.string(once('baseUrl')).min(1, 'baseUrl must not be empty').max(2048, 'baseUrl is longer than 2048 characters'),
  normalizeProjectUrl,
  'baseUrl must be an absolute http(s) URL',
).meta({
  description: "The base side's project (another of the caller's projects, e.g. production); omitted: `url`'s.",
  example: 'https://shop.example/',
});

const compareFields = {
  url: projectUrl.meta({ description: "The head side's project (the change being compared, e.g. a preview)." }),
  baseUrl: baseUrl.optional(),
  from: snapshotSide(
    'from',
    "The base side's snapshot: its date, UTC, or `latest` (the base project's newest not from a pull request; when `baseUrl` is `url`, older than `to`'s). Any two dates: `to` may be the earlier one.",
  ),
  to: snapshotSide('to', "The head side's snapshot: its date, UTC, or `latest` (the project's newest)."),
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
/** @alias A POST body takes the same parameters as the query string. */
export const updatesBodySchema = updatesQuerySchema;

// ---- /v1/overview -----------------------------------------------------------------------

const MAX_OVERVIEW_DAYS = 400;

export interface OverviewParams {
  startDate: Date;
  endDate: Date;
  domain?: string;
  updateType?: 'manual' | 'scheduled' | 'ci';
  sections?: Section[];
  /** Records of snapshots whose commit starts with this one (an abbreviation finds the full hash). */
  commit?: string;
  branch?: string;
  pullRequest?: number;
}

/** A bare host name, or a URL whose host is taken. */
function hostOf(text: string): string | null {
  return URL.parse(/^https?:\/\//i.test(text) ? text : `http://${text}`)?.hostname || null;
}

const domain = parsedString(
  z.string(once('domain')).min(1, 'domain must not be empty').max(253, 'domain is too long'),
  hostOf,
  'domain must be a host name such as shop.example',
).meta({ description: 'Domain filter.', example: 'shop.example' });

const updateTypeFilter = oneOf('updateType', ['manual', 'scheduled', 'ci']);

const revisionFilters = {
  commit: 'Only records of snapshots of this commit (an abbreviation of 7 or more digits finds the full hash).',
  branch: 'Only records of snapshots of this branch.',
  pullRequest: 'Only records of snapshots of this pull or merge request.',
};

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
    ...revisionQueryFields(revisionFilters),
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
    ...revisionBodyFields(revisionFilters),
    sections: sections.optional(),
  })
  .superRefine((value, ctx) => checkRange(value.dateRange, ctx))
  .transform(({ dateRange, sections: s, ...rest }): OverviewParams => ({
    ...rest,
    ...dateRange,
    sections: s ? [...new Set(s)] : undefined,
  }));

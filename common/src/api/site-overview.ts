import { z } from 'zod';
import { DEVICES } from '../ids.ts';

// ---- /v1/sites/{id}/overview (issue 34) ---------------------------------------------------

/** Days of the trend per group: the daily medians of this many days back from now. */
export const SITE_TREND_DAYS = 30;
/** Pages listed worst first. */
export const WORST_PAGES = 10;

/** The site named by the path. */
export const siteOverviewParamsSchema = z.strictObject({
  id: z
    .string()
    .regex(/^[0-9a-f]{24}$/, 'id must be a site id (24 hexadecimal digits)')
    .meta({ description: "The site's id, as /v1/sites lists it." }),
});
/** No parameters besides the path's. */
export const siteOverviewQuerySchema = z.strictObject({});
/** @alias A POST body takes the same parameters as the query string. */
export const siteOverviewBodySchema = siteOverviewQuerySchema;

const median = (description: string) => z.number().nullable().meta({ description });

/** The medians of one device over a group's sampled pages' latest snapshots. */
const groupDeviceSchema = z
  .object({
    device: z.enum(DEVICES),
    measuredPages: z.number().int().meta({ description: 'Sampled pages with a snapshot on this device.' }),
    score: median('Median performance score (0 to 100); null: no sampled page measured.'),
    lcp: median('Median Largest Contentful Paint, ms.'),
    tbt: median('Median Total Blocking Time, ms.'),
    cls: median('Median Cumulative Layout Shift.'),
    budgetFailures: z.number().int().meta({ description: "Failing budget checks of the pages' latest snapshots." }),
  })
  .meta({ id: 'SiteGroupDevice' });

const trendSchema = z
  .object({
    device: z.enum(DEVICES),
    points: z.array(
      z.object({
        day: z.iso.date().meta({ description: 'A UTC day.' }),
        score: z.number().meta({ description: "Median score of the group's sampled pages' snapshots that day." }),
      }),
    ),
  })
  .meta({ id: 'SiteGroupTrend' });

const groupSchema = z
  .object({
    group: z.string().meta({ description: 'Its route template (`/product/:id`).' }),
    pages: z.number().int().meta({ description: 'Pages of the group the last discovery found.' }),
    sampledPages: z.array(z.string()).meta({ description: 'URLs of its measured sample.' }),
    measured: z
      .boolean()
      .meta({ description: 'Whether any sampled page has a snapshot; false: the medians are null.' }),
    devices: z.array(groupDeviceSchema),
    budgetFailures: z.number().int().meta({ description: 'Failing budget checks over its devices.' }),
    trend: z.array(trendSchema).meta({ description: `Daily median score per device over ${SITE_TREND_DAYS} days.` }),
  })
  .meta({ id: 'SiteGroup' });

const pageSchema = z
  .object({
    url: z.string(),
    group: z.string(),
    device: z.enum(DEVICES),
    date: z.iso.datetime().meta({ description: 'Its latest snapshot.' }),
    score: z.number().nullable(),
    lcp: z.number().nullable(),
    tbt: z.number().nullable(),
    cls: z.number().nullable(),
    budgetFailures: z.number().int(),
  })
  .meta({ id: 'SitePageMeasure' });

/** The answer: the site, its groups' medians and trends, its worst pages, its last discovery's changes. */
export const siteOverviewSchema = z
  .object({
    site: z.object({
      id: z.string(),
      origin: z.string(),
      discoveredAt: z.iso
        .datetime()
        .nullable()
        .meta({ description: 'When its pages were last discovered; null: never.' }),
    }),
    groups: z.array(groupSchema).meta({ description: 'By route template.' }),
    worstPages: z
      .array(pageSchema)
      .meta({ description: `Sampled pages per device, the lowest score first (${WORST_PAGES} at most).` }),
    added: z.array(z.string()).meta({ description: 'Pages the last discovery found first.' }),
    gone: z.array(z.string()).meta({ description: 'Pages the last discovery no longer found.' }),
  })
  .meta({ id: 'SiteOverview' });
export type SiteOverview = z.infer<typeof siteOverviewSchema>;

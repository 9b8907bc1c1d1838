import { z } from 'zod';
import { DEVICES, LOCATIONS, UPDATE_TYPES, type UpdateType } from './ids.ts';
import { API_DATE_TIME_PATTERN, missingCellSchema } from './audit-result.ts';
import { SECTIONS } from './lighthouse-kpis.ts';
import { revisionSchema } from './revision.ts';

const SECTION_NAMES = SECTIONS.map((s) => s.toUpperCase()) as Array<Uppercase<(typeof SECTIONS)[number]>>;

/** `Manual`, `Scheduled`, `Ci`: the spec's capitalized update type. */
export function capitalizeUpdateType(type: UpdateType): 'Manual' | 'Scheduled' | 'Ci' {
  return (type.charAt(0).toUpperCase() + type.slice(1)) as 'Manual' | 'Scheduled' | 'Ci';
}

export const overviewRecordSchema = z
  .object({
    date: z.string().regex(API_DATE_TIME_PATTERN),
    domain: z.string(),
    url: z.string(),
    device: z.enum(DEVICES),
    location: z.enum(LOCATIONS),
    updateType: z.enum(UPDATE_TYPES.map(capitalizeUpdateType) as ['Manual', 'Scheduled', 'Ci']),
    section: z.enum(SECTION_NAMES as [string, ...string[]]),
    kpi: z.string(),
    /**
     * perfwatch's addition (issue 36): the flow step the record is of, on every record of a
     * project measured as a flow (its page's own records, CRUX and SECURITY among them, are its
     * first step's); absent for projects without a flow, whose records keep the seed's shape.
     */
    step: z.string().optional(),
    /** The code change its snapshot measured; absent when the update was given none. */
    revision: revisionSchema.optional(),
    /** An object for LIGHTHOUSE KPIs (and the other object-valued sections), a string for CRUX. */
    data: z.union([z.record(z.string(), z.unknown()), z.string()]),
  })
  .meta({ id: 'OverviewRecord' });
export type OverviewRecord = z.infer<typeof overviewRecordSchema>;

export const overviewResponseSchema = z.array(overviewRecordSchema).meta({
  id: 'Overview',
  description:
    "KPI records ordered by date, url, device, location, section, kpi (ascending); a flow's steps' records of one KPI in the flow's order.",
});

/**
 * A device's snapshots: each date, its update type and the locations it has. A schema per use,
 * so the OpenAPI document describes each device's list in place, as it did before.
 */
const snapshotDatesSchema = () =>
  z.array(
    z.object({
      date: z.string().regex(API_DATE_TIME_PATTERN),
      updateType: z.enum(UPDATE_TYPES),
      locations: z.array(z.enum(LOCATIONS)),
      /** The code change the snapshot measured; absent when its update was given none. */
      revision: revisionSchema.optional(),
    }),
  );

/** `/v1/updates`: per device, the snapshot dates with the locations each has, ascending. */
export const snapshotListSchema = z
  .object({
    url: z.string(),
    mobile: snapshotDatesSchema().optional(),
    desktop: snapshotDatesSchema().optional(),
    next: z.string().regex(API_DATE_TIME_PATTERN).optional().meta({
      description:
        'Older snapshots exist: pass this as `before` for the page before this one. Absent on the oldest page.',
    }),
  })
  .meta({ id: 'SnapshotList' });
export type SnapshotList = z.infer<typeof snapshotListSchema>;

export const asyncAckSchema = z.object({ ok: z.literal(1), id: z.string() }).meta({ id: 'AsyncAcknowledgement' });

const UPDATE_STATES = ['queued', 'running', 'done', 'failed'] as const;

/** Runs finished (succeeded or failed) of those planned for one device and location of an update. */
export const updateProgressSchema = z.object({
  device: z.enum(DEVICES),
  location: z.enum(LOCATIONS),
  done: z.number().int().nonnegative(),
  total: z.number().int().positive(),
});
export type UpdateProgress = z.infer<typeof updateProgressSchema>;

/** `/v1/updates/{id}`: where an async or scheduled update is. */
export const updateStatusSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    status: z.enum(UPDATE_STATES).meta({
      description:
        'queued → running → done, or failed (with the reason). A failed delivery that will be tried again goes back to queued, with the reason.',
    }),
    updateType: z.enum(UPDATE_TYPES),
    devices: z.array(z.enum(DEVICES)),
    locations: z.array(z.enum(LOCATIONS)),
    date: z
      .string()
      .regex(API_DATE_TIME_PATTERN)
      .nullable()
      .meta({ description: 'The snapshot date (for /v1/audit) once done.' }),
    reason: z.string().nullable(),
    attempts: z.number().int().nonnegative().meta({ description: 'Deliveries that started running it.' }),
    progress: z.array(updateProgressSchema).meta({
      description:
        'While running (and after): per device and location, the Lighthouse runs finished (succeeded or failed) out of those planned. Empty until the first delivery starts.',
    }),
    missing: z.array(missingCellSchema).meta({
      description:
        'Once done: the devices and locations the update could not measure before its deadline, and why (empty when every one was measured).',
    }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    /** The code change it measures; absent when it was given none. */
    revision: revisionSchema.optional(),
  })
  .meta({ id: 'UpdateStatus' });
export type UpdateStatusView = z.infer<typeof updateStatusSchema>;

/** One project as `/v1/projects` lists, creates or changes it. */
export const projectViewSchema = z.object({
  url: z.string(),
  domain: z.string(),
  locations: z.array(z.enum(LOCATIONS)),
  defaultLocation: z.enum(LOCATIONS),
  runs: z
    .number()
    .int()
    .positive()
    .meta({ description: 'Lighthouse runs per device and location in one update; the median run is kept.' }),
  schedule: z.string().nullable().meta({ description: 'Cron expression (UTC) of scheduled updates, or null.' }),
  // Present once set (issue 33): a project that never set them keeps the answer it had.
  devices: z
    .array(z.enum(DEVICES))
    .optional()
    .meta({ description: 'Devices an update measures when it names none; absent: never set, both.' }),
  crux: z
    .boolean()
    .optional()
    .meta({ description: 'Whether updates fetch CrUX field data; absent: never set, they do (with a key).' }),
});
export type ProjectView = z.infer<typeof projectViewSchema>;

/** `/v1/projects`: the caller's projects, by URL. */
export const projectListSchema = z.object({ projects: z.array(projectViewSchema) }).meta({ id: 'ProjectList' });
export type ProjectList = z.infer<typeof projectListSchema>;

import { z } from 'zod';
import { cellStepSchema } from './flow-results.ts';
import { DEVICES, LOCATIONS } from './ids.ts';
import { cellCheckSchema } from './budgets.ts';
import { cruxRecordSchema } from './crux.ts';
import { revisionSchema } from './revision.ts';
import { reportedArtifactsSchema } from './api/artifact-requests.ts';
import { runSummarySchema, runVerdictSchema } from './run-metrics.ts';

export const API_DATE_TIME_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

export const cruxPairSchema = z.object({
  url: cruxRecordSchema.nullable(),
  /** Present only when CrUX has data for the origin. */
  origin: cruxRecordSchema.optional(),
});

/** `<device>.<location>` of the spec's audit result. */
const locationResultSchema = z.object({
  lighthouse: z.looseObject({
    crux: cruxPairSchema,
    date: z.string().regex(API_DATE_TIME_PATTERN),
    elementCount: z.number().int().nonnegative().nullable(),
  }),
  /** 1-based index of the representative run among the successful runs (DESIGN.md). */
  median: z.number().int().positive(),
  locations: z.array(z.enum(LOCATIONS)),
  defaultLocation: z.enum(LOCATIONS),
  /** perfwatch's addition: key metrics of every successful run, in run order, with the agent that measured it. */
  runs: z.array(runSummarySchema),
  /**
   * perfwatch's addition: how far the runs are to be trusted. Absent from snapshots stored before
   * runs had verdicts.
   */
  verification: z
    .object({
      reliableRuns: z.number().int().nonnegative(),
      suspectRuns: z.number().int().nonnegative(),
      /** Extra runs the update made to measure suspect runs again (counted in the two above). */
      retests: z.number().int().nonnegative(),
      /** The verdict on the median run: suspect only when no run was reliable. */
      median: runVerdictSchema,
      /**
       * Said once when every run was doubted for its agent's host alone (and so not measured
       * again into the same condition): what the host showed, e.g. "agent london-1 read the
       * machine 23 % slower than its baseline on every run". Absent otherwise.
       */
      host: z.string().max(300).optional(),
    })
    .optional(),
  /** perfwatch's addition: the project's budget checks on this cell; absent when it had no budgets. */
  checks: z.array(cellCheckSchema).optional(),
  /** perfwatch's addition (issue 35): the representative run's requests and trace, kept, missing or expired. */
  artifacts: reportedArtifactsSchema.optional(),
  /** perfwatch's addition: the code change the update measured; absent when it was given none. */
  revision: revisionSchema.optional(),
  /**
   * perfwatch's addition (issue 36), on a flow's cell only: each step in the flow's order, with
   * its numbers in every run, its median run and that run's Lighthouse result for the step (the
   * first step's is the cell's own `lighthouse`).
   */
  steps: z.array(cellStepSchema.extend({ lighthouse: z.looseObject({}) })).optional(),
});
export type LocationResult = z.infer<typeof locationResultSchema>;

export const deviceResultSchema = z.partialRecord(z.enum(LOCATIONS), locationResultSchema);

/** A (device, location) of an update that has no result, and why (perfwatch's addition). */
export const missingCellSchema = z
  .object({ device: z.enum(DEVICES), location: z.enum(LOCATIONS), reason: z.string().max(2_000) })
  .meta({
    id: 'MissingCell',
    description: 'A device and location the update could not measure before its deadline, with the last reason.',
  });
export type MissingCell = z.infer<typeof missingCellSchema>;

/** The audit result of `/v1/update` (sync) and `/v1/audit`: keyed by device, then location. */
export const auditResultSchema = z
  .strictObject({
    ...(Object.fromEntries(DEVICES.map((device) => [device, deviceResultSchema.optional()])) as Record<
      (typeof DEVICES)[number],
      z.ZodOptional<typeof deviceResultSchema>
    >),
    missing: z.array(missingCellSchema).min(1).optional().meta({
      description:
        "perfwatch's addition, present only when a device and location of the project has no result: which, and why.",
    }),
  })
  .meta({
    id: 'AuditResult',
    description:
      'Keyed by device class, then by location; a key is present only where there is a result. `missing` names the cells without one.',
  });
export type AuditResult = z.infer<typeof auditResultSchema>;

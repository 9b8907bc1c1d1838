import { z } from 'zod';
import { requestsComparisonSchema, thirdPartyChangeSchema } from './artifact-analysis.ts';
import { API_DATE_TIME_PATTERN } from './audit-result.ts';
import { DEVICES, LOCATIONS } from './ids.ts';
import { revisionSchema } from './revision.ts';

/** The metrics a comparison looks at: the category score and Lighthouse's timings, per run. */
export const COMPARED_METRICS = ['performance', 'fcp', 'lcp', 'si', 'tti', 'tbt', 'cls'] as const;

/** Runs a side needs before its values are tested against the other side's. */
export const MIN_RUNS_FOR_TEST = 3;
/** A difference whose two-sided p-value is below this is beyond run-to-run noise. */
export const SIGNIFICANCE_LEVEL = 0.05;

const significanceSchema = z.discriminatedUnion('test', [
  z.object({
    test: z.literal('mann-whitney-u'),
    /** Two-sided p-value of the U test on the reliable runs' values of both sides. */
    p: z.number().min(0).max(1),
    beyondNoise: z.boolean(),
    runs: z.object({ from: z.number().int(), to: z.number().int() }),
  }),
  z.object({
    test: z.literal('not enough runs'),
    runs: z.object({ from: z.number().int(), to: z.number().int() }),
  }),
]);

const metricChangeSchema = z.object({
  metric: z.enum(COMPARED_METRICS),
  /** The median run's value on each side (score 0–100, timings in ms, CLS unitless). */
  from: z.number().nullable(),
  to: z.number().nullable(),
  /** to − from; null when a side has no value. */
  difference: z.number().nullable(),
  significance: significanceSchema,
});

const auditChangeSchema = z.object({
  id: z.string(),
  title: z.string(),
  /** The audit's score ×100 on each side (null: not scored, or absent). */
  from: z.number().nullable(),
  to: z.number().nullable(),
  difference: z.number(),
});

const opportunityChangeSchema = z.object({
  id: z.string(),
  title: z.string(),
  /** The load time the audit says could be saved (max of its LCP and FCP savings), ms. */
  fromMs: z.number(),
  toMs: z.number(),
  differenceMs: z.number(),
});

const compareCellSchema = z.object({
  device: z.enum(DEVICES),
  location: z.enum(LOCATIONS),
  metrics: z.array(metricChangeSchema),
  /** The scored audits whose score changed most (at most 10), largest change first. */
  audits: z.array(auditChangeSchema),
  /** The opportunities whose estimated saving changed most (at most 10), largest change first. */
  opportunities: z.array(opportunityChangeSchema),
  /**
   * Added with issue 35: the representative runs' requests added, removed and grown (at most 50
   * of each, largest first), or why they could not be compared; absent from a gateway that keeps
   * no artifacts (docs/artifacts.md, "Comparing requests").
   */
  requests: requestsComparisonSchema.optional(),
  /** Added with issue 35: third parties that came, went or whose cost moved, from the two results. */
  thirdParties: z.array(thirdPartyChangeSchema).optional(),
});
export type CompareCell = z.infer<typeof compareCellSchema>;

export const compareResultSchema = z
  .object({
    /** The head side's project: `to` is its snapshot. */
    url: z.string(),
    /** The base side's project, whose snapshot `from` is; present only when it is not `url`. */
    baseUrl: z.string().optional(),
    from: z.string().regex(API_DATE_TIME_PATTERN),
    to: z.string().regex(API_DATE_TIME_PATTERN),
    /** The code change each side's snapshot measured; present only when its update was given one. */
    fromRevision: revisionSchema.optional(),
    toRevision: revisionSchema.optional(),
    /** Every device and location both snapshots have (and the request asked for). */
    cells: z.array(compareCellSchema),
    /** Devices and locations only one of the snapshots has, so nothing to compare. */
    unmatched: z.array(
      z.object({ device: z.enum(DEVICES), location: z.enum(LOCATIONS), onlyIn: z.enum(['from', 'to']) }),
    ),
  })
  .meta({
    id: 'CompareResult',
    description:
      "Two snapshots side by side (of one project, or of two of the caller's: `baseUrl`'s then `url`'s), per device and location: the median runs' metrics, their differences and whether each is beyond run-to-run noise, and the audits and opportunities that changed most.",
  });
export type CompareResult = z.infer<typeof compareResultSchema>;

import { z } from 'zod';
import type { Device } from './ids.ts';

/**
 * Chrome UX Report field data. A record is what the CrUX API's `records:queryRecord` returns
 * under `record`: kept whole in snapshots; the Core Web Vitals assessment is derived from it.
 */
export const cruxMetricSchema = z.looseObject({
  histogram: z.array(z.looseObject({ start: z.union([z.number(), z.string()]), end: z.union([z.number(), z.string()]).optional(), density: z.number().optional() })).optional(),
  // CLS percentiles come as strings ("0.05"), the others as numbers.
  percentiles: z.looseObject({ p75: z.union([z.number(), z.string()]) }).optional(),
});

export const cruxRecordSchema = z.looseObject({
  key: z.looseObject({ formFactor: z.string().optional(), url: z.string().optional(), origin: z.string().optional() }),
  metrics: z.record(z.string(), cruxMetricSchema),
  collectionPeriod: z.unknown().optional(),
});
export type CruxRecord = z.infer<typeof cruxRecordSchema>;

export function cruxFormFactor(device: Device): 'PHONE' | 'DESKTOP' {
  return device === 'mobile' ? 'PHONE' : 'DESKTOP';
}

/** "Good" thresholds of the Core Web Vitals at p75 (web.dev/articles/vitals). */
const GOOD = { largest_contentful_paint: 2500, interaction_to_next_paint: 200, cumulative_layout_shift: 0.1 } as const;

export type CwvAssessment = 'PASSED' | 'FAILED' | 'NO_DATA';

function p75(record: CruxRecord, metric: keyof typeof GOOD): number | null {
  const value = record.metrics[metric]?.percentiles?.p75;
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

/**
 * The Core Web Vitals assessment of a record: PASSED when LCP, INP and CLS are all good at
 * p75; FAILED when any is not; NO_DATA without a record or without LCP and CLS. A page with
 * too few interactions has no INP: it is assessed on LCP and CLS, as the CrUX dashboard does.
 */
export function assessCoreWebVitals(record: CruxRecord | null | undefined): CwvAssessment {
  if (!record) return 'NO_DATA';
  const lcp = p75(record, 'largest_contentful_paint');
  const cls = p75(record, 'cumulative_layout_shift');
  const inp = p75(record, 'interaction_to_next_paint');
  if (lcp === null || cls === null) return 'NO_DATA';
  const good = lcp <= GOOD.largest_contentful_paint && cls <= GOOD.cumulative_layout_shift && (inp === null || inp <= GOOD.interaction_to_next_paint);
  return good ? 'PASSED' : 'FAILED';
}

import { z } from 'zod';
import type { Device } from './ids.ts';
import { withoutPrototypeKeys } from './own-keys.ts';

/**
 * Chrome UX Report field data. A record is what the CrUX API's `records:queryRecord` returns
 * under `record`: kept whole in snapshots; the Core Web Vitals assessment is derived from it.
 */
const cruxMetricSchema = z.looseObject({
  histogram: z
    .array(
      z.looseObject({
        start: z.union([z.number(), z.string()]),
        end: z.union([z.number(), z.string()]).optional(),
        density: z.number().optional(),
      }),
    )
    .optional(),
  // CLS percentiles come as strings ("0.05"), the others as numbers.
  percentiles: z.looseObject({ p75: z.union([z.number(), z.string()]) }).optional(),
});

export const cruxRecordSchema = z.looseObject({
  key: z.looseObject({ formFactor: z.string().optional(), url: z.string().optional(), origin: z.string().optional() }),
  metrics: withoutPrototypeKeys(z.record(z.string(), cruxMetricSchema), 'metrics'),
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
  const good =
    lcp <= GOOD.largest_contentful_paint &&
    cls <= GOOD.cumulative_layout_shift &&
    (inp === null || inp <= GOOD.interaction_to_next_paint);
  return good ? 'PASSED' : 'FAILED';
}

/** The field metrics whose p75 the overview offers, by the short name in the KPI (`url_lcp_p75`). */
export const FIELD_METRICS = {
  lcp: 'largest_contentful_paint',
  inp: 'interaction_to_next_paint',
  cls: 'cumulative_layout_shift',
  fcp: 'first_contentful_paint',
  ttfb: 'experimental_time_to_first_byte',
} as const;

/**
 * The CRUX section's records of a snapshot's field data: the Core Web Vitals assessment of the
 * page (`url`) and of its origin, as the seed has them, and (KPI version 2) each field metric's
 * p75 for both, e.g. `url_lcp_p75` → "2300". Their data is a string like the seed's CRUX
 * records, which clients written from the seed expect; a metric CrUX has no value for is
 * "NO_DATA".
 */
export function cruxKpis(
  url: CruxRecord | null | undefined,
  origin: CruxRecord | null | undefined,
): Array<{ section: 'CRUX'; kpi: string; data: string }> {
  const records: Array<{ section: 'CRUX'; kpi: string; data: string }> = [
    { section: 'CRUX', kpi: 'url', data: assessCoreWebVitals(url) },
    { section: 'CRUX', kpi: 'origin', data: assessCoreWebVitals(origin) },
  ];
  for (const [scope, record] of [
    ['url', url],
    ['origin', origin],
  ] as const) {
    for (const [name, metric] of Object.entries(FIELD_METRICS)) {
      const value = record?.metrics[metric]?.percentiles?.p75;
      records.push({
        section: 'CRUX',
        kpi: `${scope}_${name}_p75`,
        data: value === undefined || value === null ? 'NO_DATA' : String(value),
      });
    }
  }
  return records;
}

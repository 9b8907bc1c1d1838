import { z } from 'zod';
import { cruxFormFactor, FIELD_METRICS, type Device } from '@perfwatch/common';
import { callCrux } from './crux-call.ts';

/** One collection period of the CrUX History API: its last day and each field metric's p75 ("NO_DATA" without one). */
export interface FieldWeek {
  lastDate: Date;
  p75: Record<keyof typeof FIELD_METRICS, string>;
}

const dateSchema = z.object({
  year: z.number().int(),
  month: z.number().int().min(1).max(12),
  day: z.number().int().min(1).max(31),
});
const historySchema = z.looseObject({
  record: z.looseObject({
    metrics: z.record(
      z.string(),
      z.looseObject({
        percentilesTimeseries: z.looseObject({ p75s: z.array(z.union([z.number(), z.string(), z.null()])) }).optional(),
      }),
    ),
    collectionPeriods: z.array(z.looseObject({ lastDate: dateSchema })),
  }),
});

/**
 * The CrUX History API's `records:queryHistoryRecord`: up to 25 weekly 28-day periods of a page's
 * or an origin's field data, read into p75 values per period. 404 is no data; 429 and 5xx are
 * tried again with backoff.
 */
export function createCruxHistoryClient({
  endpoint,
  apiKey,
  retries = 3,
  minRetryMs = 500,
  timeoutMs = 15_000,
}: {
  endpoint: string;
  apiKey: string;
  retries?: number;
  minRetryMs?: number;
  timeoutMs?: number;
}) {
  return {
    async history(target: { url: string } | { origin: string }, device: Device): Promise<FieldWeek[]> {
      const body = { ...target, formFactor: cruxFormFactor(device), metrics: Object.values(FIELD_METRICS) };
      const parsed = await callCrux(
        { endpoint, apiKey, retries, minRetryMs, timeoutMs },
        { api: 'CrUX History API', method: 'records:queryHistoryRecord', body, schema: historySchema },
      );
      if (!parsed) return [];
      const { metrics, collectionPeriods } = parsed.record;
      return collectionPeriods.map(({ lastDate }, i) => ({
        lastDate: new Date(Date.UTC(lastDate.year, lastDate.month - 1, lastDate.day)),
        p75: Object.fromEntries(
          Object.entries(FIELD_METRICS).map(([name, metric]) => {
            const value = metrics[metric]?.percentilesTimeseries?.p75s[i];
            // The API fills periods without enough data with "NaN" or null.
            return [name, value === undefined || value === null || value === 'NaN' ? 'NO_DATA' : String(value)];
          }),
        ) as FieldWeek['p75'],
      }));
    },
  };
}

export type CruxHistoryClient = ReturnType<typeof createCruxHistoryClient>;

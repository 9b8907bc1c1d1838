import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

/** Field data from the Chrome UX Report. */
export const cruxSettings = settingGroup('Field data (CrUX)', {
  CRUX_API_KEY: z
    .string()
    .min(1)
    .optional()
    .describe('CrUX API key; without one, snapshots carry no field data and no CRUX KPI records.'),
  CRUX_API_ENDPOINT: z.url().default('https://chromeuxreport.googleapis.com').describe("The CrUX API's base URL."),
  FIELD_HISTORY_EVERY_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(86_400_000)
    .default(60_000)
    .describe('With a CrUX key: how often projects added since are given their 25 weeks of field-data history.'),
});

import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

/** The opt-in page KPIs for a team's own Prometheus (/metrics/pages; docs/operating.md). */
export const pageMetricsSettings = settingGroup('Page metrics', {
  PAGE_METRICS: z
    .enum(['on', 'off'])
    .default('off')
    .describe(
      "on: the gateway serves /metrics/pages, the KPIs of each project's latest snapshot for Prometheus " +
        '(perfwatch_page_kpi), on its API port, behind PAGE_METRICS_TOKEN. off: no such endpoint (404).',
    ),
  PAGE_METRICS_TOKEN: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe(
      "The bearer token a scrape of /metrics/pages must send (Authorization: Bearer …); required with PAGE_METRICS=on. It sees every organisation's project URLs: give it to the operator's Prometheus only. Kept as its SHA-256 hash and compared in constant time.",
    ),
  PAGE_METRICS_MAX_PROJECTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(500)
    .describe(
      'Projects /metrics/pages exposes at most (each is 9 series per device and location it was measured at): the most recently measured ones; ' +
        'how many were left out is perfwatch_page_projects_left_out.',
    ),
});

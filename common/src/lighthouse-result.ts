import { z } from 'zod';
import { withoutPrototypeKeys } from './own-keys.ts';

/**
 * The parts of a Lighthouse result (LHR) that perfwatch reads. Everything else is kept as
 * it came (loose objects), because the API returns the full lighthouse object to clients.
 */
const lhrAuditSchema = z.looseObject({
  id: z.string(),
  score: z.number().nullable().optional(),
  numericValue: z.number().optional(),
  numericUnit: z.string().optional(),
  details: z.unknown().optional(),
  metricSavings: z.record(z.string(), z.number()).optional(),
});

const lhrCategorySchema = z.looseObject({
  id: z.string(),
  score: z.number().nullable(),
  auditRefs: z
    .array(z.looseObject({ id: z.string(), weight: z.number().optional(), group: z.string().optional() }))
    .optional(),
});

export const lighthouseResultSchema = z.looseObject({
  lighthouseVersion: z.string(),
  fetchTime: z.string(),
  requestedUrl: z.string().optional(),
  finalDisplayedUrl: z.string(),
  configSettings: z.looseObject({ formFactor: z.enum(['mobile', 'desktop']).optional() }).optional(),
  audits: withoutPrototypeKeys(z.record(z.string(), lhrAuditSchema), 'audits'),
  categories: withoutPrototypeKeys(z.record(z.string(), lhrCategorySchema), 'categories'),
  runtimeError: z.looseObject({ code: z.string(), message: z.string() }).optional(),
});
export type LighthouseResult = z.infer<typeof lighthouseResultSchema>;

/** Audits whose details hold base64 images; they dominate the result's size. */
const SCREENSHOT_AUDITS = ['screenshot-thumbnails', 'final-screenshot'];

/**
 * Removes what a stored snapshot does not need and a NATS message cannot afford:
 * screenshots and the i18n message table (≈0.6 MB → ≈0.17 MB on the fixture site).
 */
export function trimLighthouseResult(
  lhr: LighthouseResult,
  options: { keepScreenshots?: boolean } = {},
): LighthouseResult {
  const trimmed: LighthouseResult = { ...lhr };
  delete trimmed.fullPageScreenshot;
  if (trimmed.i18n && typeof trimmed.i18n === 'object') {
    const { icuMessagePaths: _dropped, ...i18n } = trimmed.i18n as Record<string, unknown>;
    trimmed.i18n = i18n;
  }
  if (!options.keepScreenshots) {
    trimmed.audits = { ...lhr.audits };
    for (const id of SCREENSHOT_AUDITS) {
      const audit = trimmed.audits[id];
      if (audit) trimmed.audits[id] = { ...audit, details: undefined };
    }
  }
  return trimmed;
}

/** Numeric value of an audit, or null when Lighthouse did not compute it. */
export function auditNumber(lhr: LighthouseResult, auditId: string): number | null {
  const value = lhr.audits[auditId]?.numericValue;
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** A category score as 0–100 (Lighthouse reports 0–1), or null. */
export function categoryScore(lhr: LighthouseResult, categoryId: string): number | null {
  const score = lhr.categories[categoryId]?.score;
  return typeof score === 'number' ? Math.round(score * 100) : null;
}

/** Audits whose details the gateway reads, and which a shrink therefore never drops. */
const KEPT_DETAILS = new Set(['network-requests', 'dom-size-insight', 'third-parties-insight', 'long-tasks']);
const LARGE_DETAILS_BYTES = 64 * 1024;

/**
 * The last resort before a result is refused for size: drops everything a stored snapshot can
 * live without (screenshots, the i18n table, timing entries, script treemap data, and any other
 * audit's details over 64 kB), keeps every score, metric and the details perfwatch reads, and
 * says so in Lighthouse's own `runWarnings`, where a report reader will see it.
 */
export function shrinkLighthouseResult(lhr: LighthouseResult): LighthouseResult {
  const shrunk = trimLighthouseResult(lhr);
  delete shrunk['i18n'];
  if (shrunk['timing'] && typeof shrunk['timing'] === 'object')
    shrunk['timing'] = { total: (shrunk['timing'] as { total?: number }).total };
  const dropped: string[] = [];
  shrunk.audits = Object.fromEntries(
    Object.entries(shrunk.audits).map(([id, audit]) => {
      if (KEPT_DETAILS.has(id) || audit.details === undefined) return [id, audit];
      if (id === 'script-treemap-data' || JSON.stringify(audit.details).length > LARGE_DETAILS_BYTES) {
        dropped.push(id);
        return [id, { ...audit, details: undefined }];
      }
      return [id, audit];
    }),
  );
  const warnings = Array.isArray(shrunk['runWarnings']) ? (shrunk['runWarnings'] as unknown[]) : [];
  shrunk['runWarnings'] = [
    ...warnings,
    `perfwatch: this result was shrunk to fit the message size limit; details dropped from: ${dropped.join(', ') || 'none'}`,
  ];
  return shrunk;
}

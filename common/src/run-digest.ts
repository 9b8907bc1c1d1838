import { z } from 'zod';
import { BUDGET_KEYS } from './budgets.ts';
import { PROTOTYPE_NAMES, withoutPrototypeKeys } from './own-keys.ts';
import { LIGHTHOUSE_KPI_VERSION, lighthouseKpis, SECTIONS, type KpiRecord } from './lighthouse-kpis.ts';
import type { LighthouseResult } from './lighthouse-result.ts';
import { pageSourceKpis, savingsKpis } from './page-kpis.ts';
import { extractElementCount } from './run-metrics.ts';

/**
 * The audits whose numbers a gateway reads of every run: the key metrics (run-metrics.ts) and
 * every metric a budget can bound (budgets.ts).
 */
const DIGEST_AUDITS = [
  ...new Set([
    'first-contentful-paint',
    'largest-contentful-paint',
    'speed-index',
    'interactive',
    'total-blocking-time',
    'cumulative-layout-shift',
    ...Object.values(BUDGET_KEYS).flatMap((spec) => (spec.kind === 'metric' ? [spec.audit] : [])),
  ]),
];

const finite = z.number().refine(Number.isFinite, 'a finite number');

type KpiValue = number | null | boolean | string;

/** A KPI record has at most this many fields. */
const MAX_KPI_FIELDS = 64;

/**
 * A KPI record's fields, checked in one pass: a zod schema for each name and each value (a union
 * of four) built parse states for every one of a digest's few hundred fields, which made the
 * digests' check the largest part of reading a reply at 1,000 updates.
 */
function isKpiData(data: unknown): data is Record<string, KpiValue> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return false;
  const names = Object.keys(data);
  if (names.length > MAX_KPI_FIELDS) return false;
  for (const name of names) {
    const v = (data as Record<string, unknown>)[name];
    const valid =
      v === null ||
      typeof v === 'boolean' ||
      (typeof v === 'number' && Number.isFinite(v)) ||
      (typeof v === 'string' && v.length <= 500);
    if (!valid || name.length > 64 || PROTOTYPE_NAMES.has(name)) return false;
  }
  return true;
}

/**
 * The run as the gateway reads it, beside its result: a skeleton of the Lighthouse result
 * holding only what is read of every run (the category scores, the numbers of DIGEST_AUDITS,
 * Lighthouse's warnings), so the code that reads a full result reads it unchanged, and the KPI
 * records of the run, which need the result's details. Agents are run by other operators: every
 * part is bounded.
 */
export const runDigestSchema = z.object({
  lhr: z.object({
    lighthouseVersion: z.string().max(100),
    fetchTime: z.string().max(64),
    finalDisplayedUrl: z.string().max(8_192),
    runWarnings: z.array(z.string().max(2_000)).max(20),
    categories: withoutPrototypeKeys(
      z
        .record(z.string().max(64), z.object({ id: z.string().max(64), score: finite.nullable() }))
        .refine((c) => Object.keys(c).length <= 16, 'at most 16 categories'),
      'categories',
    ),
    audits: withoutPrototypeKeys(
      z
        .record(
          z.string().max(64),
          z.object({ id: z.string().max(64), score: finite.nullable().optional(), numericValue: finite.optional() }),
        )
        .refine((a) => Object.keys(a).length <= DIGEST_AUDITS.length, `at most ${DIGEST_AUDITS.length} audits`),
      'audits',
    ),
  }),
  elementCount: z.number().int().nonnegative().max(100_000_000).nullable(),
  /** LIGHTHOUSE_KPI_VERSION the records were taken with: a gateway of another takes them itself. */
  kpiVersion: z.number().int().positive().max(1_000),
  kpis: z
    .array(
      z.object({
        section: z.enum(
          SECTIONS.map((s) => s.toUpperCase() as Uppercase<(typeof SECTIONS)[number]>) as [
            Uppercase<(typeof SECTIONS)[number]>,
            ...Array<Uppercase<(typeof SECTIONS)[number]>>,
          ],
        ),
        kpi: z.string().min(1).max(64),
        data: z.custom<Record<string, KpiValue>>(
          isKpiData,
          `at most ${MAX_KPI_FIELDS} fields of names up to 64 characters, each a finite number, null, a boolean or a string of at most 500 characters`,
        ),
      }),
    )
    .max(32),
});
export type RunDigest = z.infer<typeof runDigestSchema>;

/** The digest of a run: what the gateway reads of it without its result. */
export function digestRun(lhr: LighthouseResult): RunDigest {
  const audits: RunDigest['lhr']['audits'] = {};
  for (const id of DIGEST_AUDITS) {
    const audit = lhr.audits[id];
    if (!audit) continue;
    audits[id] = {
      id,
      ...(audit.score !== undefined ? { score: audit.score } : {}),
      ...(audit.numericValue !== undefined ? { numericValue: audit.numericValue } : {}),
    };
  }
  const categories: RunDigest['lhr']['categories'] = {};
  for (const [id, category] of Object.entries(lhr.categories).slice(0, 16))
    categories[id] = { id, score: category.score };
  const warnings = Array.isArray(lhr['runWarnings'])
    ? lhr['runWarnings'].filter((w): w is string => typeof w === 'string').slice(0, 20)
    : [];
  return {
    lhr: {
      lighthouseVersion: lhr.lighthouseVersion,
      fetchTime: lhr.fetchTime,
      finalDisplayedUrl: lhr.finalDisplayedUrl,
      runWarnings: warnings,
      categories,
      audits,
    },
    elementCount: extractElementCount(lhr),
    kpiVersion: LIGHTHOUSE_KPI_VERSION,
    kpis: [...lighthouseKpis(lhr), ...pageSourceKpis(lhr), ...savingsKpis(lhr)] as RunDigest['kpis'],
  };
}

/** The digest's skeleton as a Lighthouse result, for the code that reads numbers off one. */
export function digestSkeleton(digest: RunDigest): LighthouseResult {
  return digest.lhr;
}

/** The digest's KPI records, when they are of this version's definitions. */
export function digestKpis(digest: RunDigest): KpiRecord[] | null {
  return digest.kpiVersion === LIGHTHOUSE_KPI_VERSION ? digest.kpis : null;
}

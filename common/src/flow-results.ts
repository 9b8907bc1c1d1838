import { z } from 'zod';
import { FLOW_LIMITS, FLOW_STEP_KINDS } from './flow.ts';
import { auditNumber, type LighthouseResult } from './lighthouse-result.ts';
import { extractRunMetrics, runMetricsSchema, runVerdictSchema } from './run-metrics.ts';

/**
 * A flow step's numbers in one run: a navigation's key metrics, a timespan's INP, TBT and CLS
 * (Lighthouse reports no load metrics there), a snapshot's category scores. Null where the step's
 * kind has no such number.
 */
const stepRunSummarySchema = runMetricsSchema.extend({
  inp: z.number().nullable(),
  /** Every category the step's result scores, 0–100 (a snapshot's are its point). */
  scores: z.record(z.string().max(64), z.number().nullable()),
  /** The run's verdict, the whole run's (a flow is one run through all its steps). */
  verdict: runVerdictSchema.optional(),
});
export type StepRunSummary = z.infer<typeof stepRunSummarySchema>;

/**
 * One step of a flow's cell as a snapshot keeps it: its name and kind, and its numbers in every
 * run; `median` (1-based) is the run whose result stands for the step, chosen among the runs
 * judged reliable by the step's own measure.
 */
export const cellStepSchema = z.object({
  name: z.string().min(1).max(FLOW_LIMITS.nameChars),
  kind: z.enum(FLOW_STEP_KINDS),
  median: z.number().int().positive(),
  runs: z.array(stepRunSummarySchema).max(100),
});
export type CellStep = z.infer<typeof cellStepSchema>;

/** A step's numbers in one run, read off its result (or its digest's skeleton of it). */
export function stepRunSummary(lhr: LighthouseResult): Omit<StepRunSummary, 'verdict'> {
  const scores: Record<string, number | null> = {};
  for (const [id, category] of Object.entries(lhr.categories))
    scores[id] = typeof category.score === 'number' ? Math.round(category.score * 100) : null;
  return { ...extractRunMetrics(lhr), inp: auditNumber(lhr, 'interaction-to-next-paint'), scores };
}

/** Where a step's numbers come from in a Lighthouse result (what budgets measure). */
const STEP_AUDITS = {
  fcp: 'first-contentful-paint',
  lcp: 'largest-contentful-paint',
  si: 'speed-index',
  tti: 'interactive',
  tbt: 'total-blocking-time',
  cls: 'cumulative-layout-shift',
  inp: 'interaction-to-next-paint',
} as const;

/**
 * A stored step's median run as a skeleton of a Lighthouse result: what a budget's regression
 * compares a step with, without reading the stored result (its scores and metrics; the page's
 * bytes and server response time are not kept per step, and a regression of those is skipped).
 */
export function stepSkeleton(step: Pick<CellStep, 'runs' | 'median'>): {
  categories: Record<string, { score: number | null }>;
  audits: Record<string, { numericValue?: number }>;
} {
  const run = step.runs[step.median - 1];
  if (!run) return { categories: {}, audits: {} };
  const audits: Record<string, { numericValue?: number }> = {};
  for (const [field, audit] of Object.entries(STEP_AUDITS)) {
    const value = run[field as keyof typeof STEP_AUDITS];
    if (value !== null) audits[audit] = { numericValue: value };
  }
  const categories = Object.fromEntries(
    Object.entries(run.scores).map(([id, score]) => [id, { score: score === null ? null : score / 100 }]),
  );
  return { categories, audits };
}

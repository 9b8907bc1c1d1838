import { z } from 'zod';
import { auditNumber, categoryScore, type LighthouseResult } from './lighthouse-result.ts';

/** The key metrics of one Lighthouse run, kept for every run of a snapshot. */
export const runMetricsSchema = z.object({
  fcp: z.number().nullable(),
  lcp: z.number().nullable(),
  si: z.number().nullable(),
  tti: z.number().nullable(),
  tbt: z.number().nullable(),
  cls: z.number().nullable(),
  performance: z.number().nullable(),
});
export type RunMetrics = z.infer<typeof runMetricsSchema>;

/** The gateway's verdict on a run (gateway/src/updates/run-verdicts.ts). */
export const runVerdictSchema = z.enum(['reliable', 'suspect']);
export type RunVerdict = z.infer<typeof runVerdictSchema>;

/**
 * A run as a snapshot keeps it: its key metrics, the agent that measured it, its verdict, and
 * the conditions it was measured in (absent for runs of agents before v1.2): the machine's benchmark index
 * then and the agent's calibrated one, the CPU slowdown applied, the other runs in progress on
 * the agent, the host's load, and the Chrome and Lighthouse versions.
 */
export const runSummarySchema = runMetricsSchema.extend({
  agentId: z.string().optional(),
  benchmarkIndex: z.number().nullable().optional(),
  baselineBenchmarkIndex: z.number().nullable().optional(),
  benchmarkSpread: z.number().optional(),
  otherCpuShare: z.number().nullable().optional(),
  cpuMultiplier: z.number().optional(),
  concurrentRuns: z.number().int().optional(),
  overlappingRuns: z.number().int().optional(),
  loadAverage: z.number().optional(),
  chromeVersion: z.string().optional(),
  lighthouseVersion: z.string().optional(),
  /**
   * Whether the gateway trusts the run's numbers, and if not why (run-verdicts.ts); absent
   * from snapshots stored before verdicts existed.
   */
  verdict: runVerdictSchema.optional(),
  reasons: z.array(z.string().max(300)).max(20).optional(),
  /**
   * On a suspect run: every reason is about its agent's host (the benchmark index off its
   * baseline, the CPU taken by other processes), none about the run; such runs are not re-tested.
   */
  hostOnly: z.literal(true).optional(),
  /** On a re-test: the 1-based number of the suspect run it measured again. */
  retestOf: z.number().int().positive().optional(),
});
export type RunSummary = z.infer<typeof runSummarySchema>;

export function extractRunMetrics(lhr: LighthouseResult): RunMetrics {
  return {
    fcp: auditNumber(lhr, 'first-contentful-paint'),
    lcp: auditNumber(lhr, 'largest-contentful-paint'),
    si: auditNumber(lhr, 'speed-index'),
    tti: auditNumber(lhr, 'interactive'),
    tbt: auditNumber(lhr, 'total-blocking-time'),
    cls: auditNumber(lhr, 'cumulative-layout-shift'),
    performance: categoryScore(lhr, 'performance'),
  };
}

/**
 * Total number of HTML elements. Lighthouse 13 dropped the `dom-size` audit; its
 * `dom-size-insight` carries the count as numericValue. Older results still have `dom-size`.
 */
export function extractElementCount(lhr: LighthouseResult): number | null {
  const count = auditNumber(lhr, 'dom-size-insight') ?? auditNumber(lhr, 'dom-size');
  return count === null ? null : Math.round(count);
}

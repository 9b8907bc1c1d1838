import { z } from 'zod';
import {
  AUDIT_ERROR_CODES,
  DEVICES,
  flowSchema,
  pageAuthSchema,
  type AuditFailure,
  type AuditErrorCode,
} from '@perfwatch/common';
import type { RunOutput } from './lighthouse-runner.ts';

/** What a runner pool tells each of its worker threads at start. */
export const runnerWorkerDataSchema = z.object({
  runnerIndex: z.number().int().nonnegative(),
  chromePath: z.string(),
  noSandbox: z.boolean(),
  runsPerBrowser: z.number().int().nonnegative(),
  allowTargets: z.string(),
  logLevel: z.string(),
  cpu: z.object({ multiplier: z.union([z.literal('auto'), z.number().positive()]) }).optional(),
});
export type RunnerWorkerData = z.infer<typeof runnerWorkerDataSchema>;

export const poolRequestSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('run'),
    id: z.number().int(),
    request: z.object({
      url: z.string(),
      device: z.enum(DEVICES),
      timeoutMs: z.number().int().positive(),
      baselineBenchmarkIndex: z.number().positive().nullable().optional(),
      auth: pageAuthSchema.optional(),
      flow: flowSchema.optional(),
    }),
  }),
  z.object({ type: z.literal('calibrate'), id: z.number().int() }),
  z.object({ type: z.literal('close') }),
]);
export type PoolRequest = z.infer<typeof poolRequestSchema>;

export type PoolResponse =
  | { id: number; ok: true; output: RunOutput }
  | { id: number; ok: true; benchmarkIndexes: number[] }
  | { id: number; ok: false; failure: AuditFailure };

export function isAuditErrorCode(code: string): code is AuditErrorCode {
  return (AUDIT_ERROR_CODES as readonly string[]).includes(code);
}

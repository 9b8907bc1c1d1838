import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { z } from 'zod';
import { DEVICES, LOCATIONS, type Location } from './ids.ts';
import { lighthouseResultSchema } from './lighthouse-result.ts';
import { securityFactsSchema } from './security-kpis.ts';

/**
 * The NATS contract between gateway and agents, version 1. Changes within v1 are additive
 * only; golden fixtures under test/fixtures/contract/v1 are only ever added to.
 */
export const AUDIT_SUBJECT_PREFIX = 'perfwatch.audit.v1';

export function auditSubject(location: Location): string {
  return `${AUDIT_SUBJECT_PREFIX}.${location}`;
}

/** Agents of one location share its jobs through this queue group. */
export function auditQueueGroup(location: Location): string {
  return `perfwatch-agents.${location}`;
}

/** Header names carried on audit messages. */
export const HEADERS = {
  requestId: 'Perfwatch-Request-Id',
  contentEncoding: 'Content-Encoding',
} as const;

export const auditJobSchema = z.object({
  jobId: z.string().min(1).max(200),
  updateId: z.string().min(1).max(200),
  url: z.url({ protocol: /^https?$/ }),
  device: z.enum(DEVICES),
  location: z.enum(LOCATIONS),
  runIndex: z.number().int().min(0).max(99),
  /** How long the agent may spend on this run before giving up on it. */
  timeoutMs: z.number().int().positive(),
  /**
   * Added in v1.1: agents that should hand this job back (a retry goes to another agent than
   * the one that failed). Agents of v1.0 ignore it, which only loses the preference.
   */
  excludeAgents: z.array(z.string().min(1).max(200)).max(100).optional(),
});
export type AuditJob = z.infer<typeof auditJobSchema>;

export const AUDIT_ERROR_CODES = [
  'BAD_JOB',
  'PAGE_LOAD_FAILED',
  /** The URL, a redirect of it, or its address is not one the agent may reach. */
  'TARGET_REFUSED',
  'LIGHTHOUSE_FAILED',
  'BROWSER_FAILED',
  'RUN_TIMEOUT',
  'RESULT_TOO_LARGE',
  'AGENT_SHUTTING_DOWN',
  /** The agent is at capacity; the job should be offered again, to any agent of the location. */
  'AGENT_BUSY',
  /** The job names this agent in `excludeAgents`; it should be offered again, to another agent. */
  'AGENT_EXCLUDED',
  'INTERNAL',
] as const;
export type AuditErrorCode = (typeof AUDIT_ERROR_CODES)[number];

export const auditFailureSchema = z.object({
  /**
   * One of AUDIT_ERROR_CODES when this version sent it; any code is read, so an agent of a
   * later v1 minor version can add codes without its replies being refused.
   */
  code: z.string().min(1).max(64),
  message: z.string(),
  /** Whether another attempt, perhaps on another agent, may succeed. */
  retryable: z.boolean(),
});
export type AuditFailure = z.infer<typeof auditFailureSchema>;

export const auditRunResultSchema = z.object({
  jobId: z.string(),
  agentId: z.string(),
  location: z.enum(LOCATIONS),
  device: z.enum(DEVICES),
  runIndex: z.number().int(),
  startedAt: z.string(),
  /** Wall time of the Lighthouse run itself, inside the agent. */
  lighthouseMs: z.number().nonnegative(),
  lhr: lighthouseResultSchema,
  /** Added in v1.1: the page's transport and security headers, when the agent could look. */
  security: securityFactsSchema.optional(),
});
export type AuditRunResult = z.infer<typeof auditRunResultSchema>;

export const auditReplySchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), result: auditRunResultSchema }),
  z.object({
    ok: z.literal(false),
    jobId: z.string().optional(),
    /** Added in v1.1: which agent failed, so a retry can go elsewhere. */
    agentId: z.string().optional(),
    error: auditFailureSchema,
  }),
]);
export type AuditReply = z.infer<typeof auditReplySchema>;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Replies are gzip-compressed JSON: a Lighthouse result is 0.2–0.7 MB of JSON, close to or
 * past NATS's 1 MB default max_payload, and compresses about 6:1.
 */
export async function encodeReply(reply: AuditReply): Promise<Uint8Array> {
  return gzipAsync(Buffer.from(JSON.stringify(reply)));
}

export async function decodeReply(data: Uint8Array, contentEncoding: string | undefined): Promise<AuditReply> {
  const raw = contentEncoding === 'gzip' ? await gunzipAsync(data) : Buffer.from(data);
  return auditReplySchema.parse(JSON.parse(raw.toString('utf8')));
}

export function encodeJob(job: AuditJob): Uint8Array {
  return Buffer.from(JSON.stringify(auditJobSchema.parse(job)));
}

export function decodeJob(data: Uint8Array): AuditJob {
  return auditJobSchema.parse(JSON.parse(Buffer.from(data).toString('utf8')));
}

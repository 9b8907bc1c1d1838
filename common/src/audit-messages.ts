import { z } from 'zod';
import { pageAuthSchema } from './page-auth.ts';
import { FLOW_LIMITS, FLOW_STEP_KINDS, flowSchema, type Flow } from './flow.ts';
import { DEVICES, LOCATIONS, type Location } from './ids.ts';
import { lighthouseResultSchema } from './lighthouse-result.ts';
import { digestRun, runDigestSchema } from './run-digest.ts';
import { securityFactsSchema } from './security-kpis.ts';

/**
 * The NATS contract between gateway and agents, version 1. Changes within v1 are additive
 * only; golden fixtures under test/fixtures/contract/v1 are only ever added to.
 */
const AUDIT_SUBJECT_PREFIX = 'perfwatch.audit.v1';

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
  /** Added in v1.2 on replies: the agent that answers, readable before the body is inflated. */
  agentId: 'Perfwatch-Agent-Id',
  /**
   * Added in v1.5 on replies in two parts: the length of the first (the gzip of the reply with
   * the run's digest); the rest is the gzip of the Lighthouse result's JSON.
   */
  replyParts: 'Perfwatch-Reply-Parts',
  /**
   * Added in v1.6 on two-part replies: `identity` when the first part is the reply's JSON as it
   * is (the job asked with `plainDigest`); absent, it is gzip, as in v1.5.
   */
  digestEncoding: 'Perfwatch-Digest-Encoding',
  /**
   * Added in v1.8 on two-part replies of a flow's run: the lengths, comma-separated, of the gzip
   * of each step's Lighthouse result, which follow the first part in step order (the first step's
   * is the run's result, as in a navigation's reply).
   */
  stepParts: 'Perfwatch-Step-Parts',
} as const;

/**
 * Agent ids: what a Kubernetes pod name, a hostname-pid or an operator's own name looks like.
 * Agents are run by other operators: nothing they send is logged or kept unbounded.
 */
export const agentIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/, 'an agent id is 1–128 letters, digits and . _ : @ -');

/** A reply inflates to at most this: a real Lighthouse result is 0.2–2 MB, a gzip bomb is not. */
export const MAX_REPLY_INFLATED_BYTES = 16 * 1024 * 1024;
/** Longer failure messages from an agent are cut here. */
const MAX_FAILURE_MESSAGE_CHARS = 2_000;

/** A reply the gateway refuses before it reads it as a run: too big, not gzip, not v1. */
export class ReplyRefused extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReplyRefused';
  }
}

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
  /**
   * Added in v1.3: how to get past the page's login (page-auth.ts). Agents of earlier versions
   * ignore it and measure what an anonymous visitor gets (the login page, most often), which
   * the result's final URL shows.
   */
  auth: pageAuthSchema.optional(),
  /**
   * Added in v1.5: answer with the run's digest (run-digest.ts) and the result compressed apart
   * (encodeReplyParts), so the gateway reads a few hundred bytes of each run and keeps the
   * result as sent. Agents of earlier versions send the whole result, which it digests itself.
   */
  digest: z.literal(true).optional(),
  /**
   * Added in v1.6, beside `digest`: send the first part as plain JSON. A digest is a few
   * kilobytes, and inflating one cost a gateway more than the bytes it saved on the wire
   * (bench/results.md, dispatch at scale). Agents of v1.5 ignore it and send it gzipped, which
   * the Perfwatch-Digest-Encoding header tells apart.
   */
  plainDigest: z.literal(true).optional(),
  /**
   * Added in v1.8: run this user flow (flow.ts) instead of a navigation of `url`, every navigate
   * step with its URL. Agents of earlier versions ignore it and measure `url` alone; their reply
   * has no `steps`, and the gateway refuses it as not answering the job.
   */
  flow: flowSchema
    .refine(
      (flow: Flow) => flow.steps.every((step) => step.kind !== 'navigate' || step.url !== undefined),
      "a job's flow names every navigate step's URL",
    )
    .optional(),
});
export type AuditJob = z.infer<typeof auditJobSchema>;

export const AUDIT_ERROR_CODES = [
  'BAD_JOB',
  'PAGE_LOAD_FAILED',
  /** The URL, a redirect of it, or its address is not one the agent may reach. */
  'TARGET_REFUSED',
  /** A login step's `fill` found the page on another origin than the step is meant for, and typed nothing. */
  'LOGIN_ORIGIN_MISMATCH',
  'LIGHTHOUSE_FAILED',
  'BROWSER_FAILED',
  'RUN_TIMEOUT',
  'RESULT_TOO_LARGE',
  'AGENT_SHUTTING_DOWN',
  /** The agent is at capacity; the job should be offered again, to any agent of the location. */
  'AGENT_BUSY',
  /** The job names this agent in `excludeAgents`; it should be offered again, to another agent. */
  'AGENT_EXCLUDED',
  /** Added in v1.8: a step of the job's flow could not be taken (its element never came, its page did not load); the message names it. */
  'FLOW_STEP_FAILED',
  'INTERNAL',
] as const;
export type AuditErrorCode = (typeof AUDIT_ERROR_CODES)[number];

const auditFailureSchema = z.object({
  /**
   * One of AUDIT_ERROR_CODES when this version sent it; any code is read, so an agent of a
   * later v1 minor version can add codes without its replies being refused.
   */
  code: z.string().min(1).max(64),
  message: z
    .string()
    .transform((message) =>
      message.length > MAX_FAILURE_MESSAGE_CHARS ? `${message.slice(0, MAX_FAILURE_MESSAGE_CHARS)}…` : message,
    ),
  /** Whether another attempt, perhaps on another agent, may succeed. */
  retryable: z.boolean(),
});
export type AuditFailure = z.infer<typeof auditFailureSchema>;

/**
 * What a number depends on beside the page: the machine's speed when the run was made, the CPU
 * slowdown applied to it, how busy the agent and its host were, and the software versions.
 */
export const runConditionsSchema = z.object({
  /** Lighthouse's benchmark index of this run (null when Lighthouse could not compute one). */
  benchmarkIndex: z.number().nonnegative().max(1_000_000).nullable(),
  /** The agent's calibrated benchmark index when the run started: the baseline a run is compared with. */
  baselineBenchmarkIndex: z.number().nonnegative().max(1_000_000).nullable(),
  /**
   * Added in v1.7: how far (a fraction) this agent's own lone readings of the index spread around
   * its baseline, as the drift the agent's machine shows with nothing wrong; absent from earlier
   * agents (the gateway then allows BENCHMARK_DRIFT_LIMIT). Readings that disagree wildly (a
   * host under heavy load while calibrating) spread past 1; the gateway caps the limit it allows
   * anyway, so the bound only keeps the number sane.
   */
  benchmarkSpread: z.number().nonnegative().max(1_000).optional(),
  /**
   * Added in v1.7: the share (0–1) of the host's CPU time, while the run lasted, that went to
   * anything but the run itself (its Chrome and Lighthouse): the neighbours it competed with. Null
   * where the agent cannot read it (no /proc); absent from earlier agents.
   */
  otherCpuShare: z.number().min(0).max(1).nullable().optional(),
  /** The CPU slowdown applied (1 for desktop runs). */
  cpuMultiplier: z.number().positive().max(100),
  /** Other runs in progress on the agent when this one started. */
  concurrentRuns: z.number().int().nonnegative().max(1_000),
  /** Other runs in progress on the agent at any time during this one (those at its start included); absent from agents that did not count them. */
  overlappingRuns: z.number().int().nonnegative().max(10_000).optional(),
  /** The host's one-minute load average when the run started. */
  loadAverage: z.number().nonnegative().max(100_000),
  chromeVersion: z.string().max(100),
  lighthouseVersion: z.string().max(100),
});
export type RunConditions = z.infer<typeof runConditionsSchema>;

/**
 * A whole Lighthouse result in a reply (agents before v1.5; and any agent may send one): held
 * to the digest's bounds (run-digest.ts), since what a gateway keeps of it beside the result's
 * bytes is its digest, taken here. A result whose version, URL, warnings, categories or the KPI
 * records they make are over those bounds is refused as a v1.5 agent's digest would be: a
 * 16 MiB category id must not become a KPI name, nor a version string a snapshot's field.
 */
const replyLighthouseResultSchema = lighthouseResultSchema.superRefine((lhr, ctx) => {
  const digest = runDigestSchema.safeParse(digestRun(lhr));
  if (digest.success) return;
  for (const issue of digest.error.issues.slice(0, 3)) {
    const [head, ...rest] = issue.path;
    ctx.addIssue(
      head === 'lhr'
        ? { code: 'custom', path: rest, message: issue.message }
        : { code: 'custom', message: `its ${issue.path.join('.')}: ${issue.message}` },
    );
  }
});

/** A flow step as a reply names it: what binds the step's result to the job's step. */
const replyStepFields = {
  name: z.string().min(1).max(FLOW_LIMITS.nameChars),
  kind: z.enum(FLOW_STEP_KINDS),
};

const auditRunResultSchema = z.object({
  jobId: z.string().min(1).max(200),
  agentId: agentIdSchema,
  location: z.enum(LOCATIONS),
  device: z.enum(DEVICES),
  runIndex: z.number().int().min(0).max(99),
  startedAt: z.iso.datetime(),
  /** Wall time of the Lighthouse run itself, inside the agent. */
  lighthouseMs: z.number().nonnegative().max(86_400_000),
  lhr: replyLighthouseResultSchema,
  /** Added in v1.1: the page's transport and security headers, when the agent could look. */
  security: securityFactsSchema.optional(),
  /** Added in v1.2: the conditions the run was made in; agents of earlier versions send none. */
  conditions: runConditionsSchema.optional(),
  /**
   * Added in v1.8, on a flow's run only: each step's result in the flow's order; the first (a
   * navigation) is also the run's `lhr`.
   */
  steps: z
    .array(z.object({ ...replyStepFields, lhr: replyLighthouseResultSchema }))
    .min(1)
    .max(FLOW_LIMITS.steps)
    .optional(),
});
export type AuditRunResult = z.infer<typeof auditRunResultSchema>;

const failedReplySchema = z.object({
  ok: z.literal(false),
  jobId: z.string().min(1).max(200).optional(),
  /** Added in v1.1: which agent failed, so a retry can go elsewhere. */
  agentId: agentIdSchema.optional(),
  error: auditFailureSchema,
});

export const auditReplySchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), result: auditRunResultSchema }),
  failedReplySchema,
]);
export type AuditReply = z.infer<typeof auditReplySchema>;

/** Added in v1.5: a run as the first part of a two-part reply has it, its digest for its result. */
const digestedRunResultSchema = auditRunResultSchema.omit({ lhr: true, steps: true }).extend({
  digest: runDigestSchema,
  /** Added in v1.8, on a flow's run only: each step's digest; their results follow as Perfwatch-Step-Parts says. */
  steps: z
    .array(z.object({ ...replyStepFields, digest: runDigestSchema }))
    .min(1)
    .max(FLOW_LIMITS.steps)
    .optional(),
});
export type DigestedRunResult = z.infer<typeof digestedRunResultSchema>;
export const digestedReplySchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), result: digestedRunResultSchema }),
  failedReplySchema,
]);

/**
 * A reply as a gateway reads it: an agent of v1.5 sends a successful run's digest and its
 * result as the gzip the gateway stores (`lighthouseGzip`, never inflated on receipt); earlier
 * agents, and failures, the v1 reply.
 */
export type ReceivedReply =
  | AuditReply
  | {
      ok: true;
      result: DigestedRunResult;
      lighthouseGzip: Buffer;
      /** A flow's run (v1.8): each step's result as sent, in the steps' order; the first is `lighthouseGzip`. */
      stepGzips?: Buffer[];
    };

/**
 * Why a well-formed reply does not answer the job it came back for, or null when it does: an
 * agent must not pass off another job's run (its own, replayed, or forged) as this one.
 */
export function replyMismatch(job: AuditJob, reply: ReceivedReply): string | null {
  if (!reply.ok)
    return reply.jobId !== undefined && reply.jobId !== job.jobId
      ? `a failure of job ${reply.jobId}, not ${job.jobId}`
      : null;
  const { result } = reply;
  const expected = { jobId: job.jobId, location: job.location, device: job.device, runIndex: job.runIndex };
  for (const [key, value] of Object.entries(expected)) {
    if (result[key as keyof typeof expected] !== value)
      return `a run whose ${key} is ${JSON.stringify(result[key as keyof typeof expected]).slice(0, 100)}, not ${JSON.stringify(value)}`;
  }
  return stepsMismatch(job.flow, result.steps);
}

/** Why a run's steps are not the job's flow's (an agent before v1.8 sends none), or null. */
function stepsMismatch(flow: Flow | undefined, steps: ReadonlyArray<{ name: string; kind: string }> | undefined) {
  if (!flow) return steps === undefined ? null : 'flow steps for a job that has no flow';
  if (!steps) return 'a navigation for a job that is a flow (the agent runs no flows: v1.8)';
  if (steps.length !== flow.steps.length) return `${steps.length} flow steps, not ${flow.steps.length}`;
  const wrong = flow.steps.findIndex((step, i) => steps[i]!.name !== step.name || steps[i]!.kind !== step.kind);
  // Both the kind and the name: a step of the right name but another kind must not read "x, not x".
  const shown = (step: { name: string; kind: string }) => `${step.kind} ${JSON.stringify(step.name).slice(0, 60)}`;
  return wrong === -1 ? null : `flow step ${wrong + 1} is ${shown(steps[wrong]!)}, not ${shown(flow.steps[wrong]!)}`;
}

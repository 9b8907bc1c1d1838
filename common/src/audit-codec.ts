import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { z } from 'zod';
import { digestRun, type RunDigest } from './run-digest.ts';
import { gunzipSized, gzipClaimedLength } from './gzip-sized.ts';
import {
  auditJobSchema,
  auditReplySchema,
  digestedReplySchema,
  MAX_REPLY_INFLATED_BYTES,
  ReplyRefused,
  type AuditJob,
  type AuditReply,
  type ReceivedReply,
} from './audit-messages.ts';

/*
 * The v1 audit messages as bytes on the wire (their shapes are in audit-messages.ts): a job is
 * plain JSON; a reply is gzip, in one part or (v1.5) two, read with bounds on what it inflates to.
 */

/** The first part of a two-part reply inflates to at most this: a digest is a few kilobytes. */
const MAX_REPLY_DIGEST_BYTES = 256 * 1024;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Replies are gzip-compressed JSON: a Lighthouse result is 0.2–0.7 MB of JSON, close to or
 * past NATS's 1 MB default max_payload, and compresses about 6:1.
 */
export async function encodeReply(reply: AuditReply): Promise<Uint8Array> {
  return gzipAsync(Buffer.from(JSON.stringify(reply)));
}

/**
 * A successful run's reply in two parts (v1.5): the reply with the run's digest in place of its
 * result (its gzip, or as it is when `plainDigest`, v1.6), then the gzip of the result's JSON.
 * `parts` is the first part's length, sent in the Perfwatch-Reply-Parts header.
 */
export async function encodeReplyParts(
  reply: Extract<AuditReply, { ok: true }>,
  digest: RunDigest = digestRun(reply.result.lhr),
  { plainDigest = false }: { plainDigest?: boolean } = {},
): Promise<{ data: Buffer; parts: number; stepParts?: string }> {
  const { lhr, steps, ...run } = reply.result;
  const stepDigests = steps?.map(({ name, kind, lhr: stepLhr }, i) => ({
    name,
    kind,
    digest: i === 0 ? digest : digestRun(stepLhr),
  }));
  const headJson = Buffer.from(
    JSON.stringify({ ok: true, result: { ...run, digest, ...(stepDigests ? { steps: stepDigests } : {}) } }),
  );
  // A flow's steps follow in order, the first (the run's own result) as a navigation's result would.
  const results = steps ? steps.map((step) => step.lhr) : [lhr];
  const [head, ...gzips] = await Promise.all([
    plainDigest ? headJson : gzipAsync(headJson),
    ...results.map((result) => gzipAsync(Buffer.from(JSON.stringify(result)))),
  ]);
  return {
    data: Buffer.concat([head, ...gzips]),
    parts: head.byteLength,
    ...(steps ? { stepParts: gzips.map((g) => g.byteLength).join(',') } : {}),
  };
}

/**
 * The second part of a two-part reply, checked without inflating it: gzip, and its trailer's
 * length within the bound. The trailer can lie; whoever inflates the result later bounds the
 * output again.
 */
function checkedResultPart(part: Uint8Array, maxBytes: number): Buffer {
  if (part.byteLength < 18 || part[0] !== 0x1f || part[1] !== 0x8b || part[2] !== 0x08)
    throw new ReplyRefused("the reply's result is not gzip");
  if (part.byteLength > maxBytes) throw new ReplyRefused(`the reply's result is over ${maxBytes} bytes`);
  if (gzipClaimedLength(part) > maxBytes) throw new ReplyRefused(`the reply's result inflates past ${maxBytes} bytes`);
  // A copy: the message's buffer may be a view of a larger read. Copied with set (a memcpy):
  // Buffer.from copies a Uint8Array that is not a Buffer element by element.
  const copy = Buffer.allocUnsafeSlow(part.byteLength);
  copy.set(part);
  return copy;
}

async function inflated(data: Uint8Array, maxBytes: number): Promise<Buffer> {
  try {
    return await gunzipAsync(data, { maxOutputLength: maxBytes });
  } catch (error) {
    throw inflateRefusal(error, maxBytes);
  }
}

/**
 * A digest part's JSON: as sent when it is plain (`identity`, v1.6), else inflated on this
 * thread: a few kilobytes (and never past the digest bound), for which the thread pool's round
 * trip costs more than inflating.
 */
function digestPartJson(data: Uint8Array, maxBytes: number, encoding: string | undefined): Buffer {
  if (data.byteLength > maxBytes) throw new ReplyRefused(`the reply's digest is over ${maxBytes} bytes`);
  if (encoding === 'identity') return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (encoding !== undefined) throw new ReplyRefused("the reply's digest is in an encoding of no v1 version");
  try {
    return gunzipSized(data, { maxOutput: maxBytes, maxChunk: maxBytes });
  } catch (error) {
    throw inflateRefusal(error, maxBytes);
  }
}

function inflateRefusal(error: unknown, maxBytes: number): ReplyRefused {
  const tooBig = (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
  return new ReplyRefused(
    tooBig ? `the reply inflates past ${maxBytes} bytes` : `the reply is not gzip: ${(error as Error).message}`,
    { cause: error },
  );
}

function parsedAs<T>(raw: Buffer, schema: z.ZodType<T>): T {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new ReplyRefused('the reply is not JSON', { cause: error });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(reply)'}: ${issue.message}`.slice(0, 200));
    throw new ReplyRefused(`the reply does not match the v1 contract (${issues.join('; ')})`, { cause: parsed.error });
  }
  return parsed.data;
}

/** A reply's headers that say how its bytes are laid out. */
export interface ReplyLayout {
  /** Content-Encoding. */
  contentEncoding?: string | undefined;
  /** Perfwatch-Reply-Parts (v1.5). */
  parts?: string | undefined;
  /** Perfwatch-Digest-Encoding (v1.6). */
  digestEncoding?: string | undefined;
  /** Perfwatch-Step-Parts (v1.8): a flow's step results' lengths. */
  stepParts?: string | undefined;
}

/**
 * Reads a reply as a gateway does: a two-part one (`parts`, the Perfwatch-Reply-Parts header)
 * by its digest alone, any other inflating at most MAX_REPLY_INFLATED_BYTES; anything else is
 * ReplyRefused.
 */
export async function receiveReply(
  data: Uint8Array,
  { contentEncoding, parts, digestEncoding, stepParts }: ReplyLayout,
  { maxBytes = MAX_REPLY_INFLATED_BYTES }: { maxBytes?: number } = {},
): Promise<ReceivedReply> {
  if (parts === undefined) return decodeReply(data, contentEncoding, { maxBytes });
  const split = /^\d{1,9}$/.test(parts) ? Number(parts) : Number.NaN;
  if (contentEncoding !== 'gzip' || !(split > 0 && split < data.byteLength))
    throw new ReplyRefused("the reply's parts do not add up");
  const reply = parsedAs(
    digestPartJson(data.subarray(0, split), Math.min(maxBytes, MAX_REPLY_DIGEST_BYTES), digestEncoding),
    digestedReplySchema,
  );
  if (!reply.ok) throw new ReplyRefused('a failure comes in one part');
  const rest = data.subarray(split);
  if (stepParts === undefined) {
    if (reply.result.steps) throw new ReplyRefused('flow steps without their results (Perfwatch-Step-Parts)');
    return { ...reply, lighthouseGzip: checkedResultPart(rest, maxBytes) };
  }
  const stepGzips = splitSteps(rest, stepParts, reply.result.steps?.length ?? 0, maxBytes);
  return { ...reply, lighthouseGzip: stepGzips[0]!, stepGzips };
}

/**
 * A flow's step results (v1.8), each checked as a run's result is; their lengths must match the
 * steps the digest names and add up to the rest of the reply.
 */
function splitSteps(rest: Uint8Array, header: string, steps: number, maxBytes: number): Buffer[] {
  const lengths = /^\d{1,9}(?:,\d{1,9}){0,63}$/.test(header) ? header.split(',').map(Number) : [];
  if (steps === 0 || lengths.length !== steps) throw new ReplyRefused("the reply's steps do not match its step parts");
  if (lengths.reduce((sum, n) => sum + n, 0) !== rest.byteLength)
    throw new ReplyRefused("the reply's step parts do not add up");
  let offset = 0;
  return lengths.map((length) => {
    const part = checkedResultPart(rest.subarray(offset, offset + length), maxBytes);
    offset += length;
    return part;
  });
}

/** Reads a reply, inflating at most MAX_REPLY_INFLATED_BYTES; anything else is ReplyRefused. */
export async function decodeReply(
  data: Uint8Array,
  contentEncoding: string | undefined,
  { maxBytes = MAX_REPLY_INFLATED_BYTES }: { maxBytes?: number } = {},
): Promise<AuditReply> {
  let raw: Buffer;
  if (contentEncoding === 'gzip') raw = await inflated(data, maxBytes);
  else {
    if (data.byteLength > maxBytes) throw new ReplyRefused(`the reply is over ${maxBytes} bytes`);
    raw = Buffer.from(data);
  }
  return parsedAs(raw, auditReplySchema);
}

export function encodeJob(job: AuditJob): Uint8Array {
  return Buffer.from(JSON.stringify(auditJobSchema.parse(job)));
}

export function decodeJob(data: Uint8Array): AuditJob {
  return auditJobSchema.parse(JSON.parse(Buffer.from(data).toString('utf8')));
}

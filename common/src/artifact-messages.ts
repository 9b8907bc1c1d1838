import { z } from 'zod';
import { agentIdSchema } from './audit-messages.ts';
import type { Location } from './ids.ts';

/**
 * How a run's heavy evidence (its network requests and DevTools trace) travels from the agent
 * that made the run to the gateway, version 1 (docs/artifacts.md, "How artifacts travel").
 * Never in the job's reply: NATS's max_payload bounds that. The gateway asks the agent for the
 * one run it chose (`pull`), then the agent sends the artifact in chunks, each a request the
 * gateway acknowledges (`push`): the acknowledgement is the back-pressure.
 */
const PREFIX = 'perfwatch.artifacts.v1';

export const ARTIFACT_KINDS = ['requests', 'trace'] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

/** Bounds of one artifact, gzip bytes as sent and stored. */
export const ARTIFACT_MAX_BYTES: Readonly<Record<ArtifactKind, number>> = {
  // 5,000 requests are about 1.5 MB of NDJSON, 0.2 MB gzipped: the bound leaves ten times that.
  requests: 2 * 1024 * 1024,
  // A heavy page's trace is 30–80 MB of JSON, 3–8 MB gzipped.
  trace: 20 * 1024 * 1024,
};

export const ARTIFACT_CONTENT_TYPES: Readonly<Record<ArtifactKind, string>> = {
  requests: 'application/x-ndjson',
  trace: 'application/json',
};

/** A chunk's bytes at most: what the gateway holds per transfer in flight. */
export const ARTIFACT_CHUNK_BYTES = 256 * 1024;

export const ARTIFACT_HEADERS = {
  /** 0, 1, 2 … in order; a gap or repeat ends the transfer. */
  seq: 'Perfwatch-Chunk-Seq',
  /** `1` on the last chunk. */
  last: 'Perfwatch-Chunk-Last',
} as const;

/** Agent ids may hold dots, which subjects split on: the subject carries the id's base64url. */
export function artifactPullSubject(location: Location, agentId: string): string {
  return `${PREFIX}.${location}.pull.${Buffer.from(agentId, 'utf8').toString('base64url')}`;
}

/** The agent subscribes to its own pulls in the location's queue group (the permission asks for it). */
export function artifactPullQueueGroup(location: Location): string {
  return `perfwatch-agents.${location}`;
}

export function artifactPushSubject(location: Location, token: string): string {
  return `${PREFIX}.${location}.push.${token}`;
}

/**
 * Where the gateway's acknowledgement of one chunk comes back to the agent: a subject of the
 * location's own, so an agent's role needs no `_INBOX.>` (which would show it other clients' replies).
 */
export function artifactAckSubject(location: Location, nonce: string): string {
  return `${PREFIX}.${location}.ack.${nonce}`;
}

/** Unguessable, made by the gateway for one transfer: 24 random bytes, base64url. */
const transferTokenSchema = z.string().regex(/^[A-Za-z0-9_-]{32}$/);

/** The gateway's ask: send `kind` of the run of `jobId` on the push subject of `token`. */
export const artifactPullSchema = z.object({
  v: z.literal(1),
  jobId: z.string().min(1).max(200),
  agentId: agentIdSchema,
  kind: z.enum(ARTIFACT_KINDS),
  token: transferTokenSchema,
});
export type ArtifactPull = z.infer<typeof artifactPullSchema>;

/** The agent's answer to a pull: it starts sending `bytes`, or has none (evicted, never made, cut off). */
export const artifactPullAnswerSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), bytes: z.number().int().nonnegative(), truncated: z.boolean() }),
  z.object({ ok: z.literal(false), code: z.enum(['NO_ARTIFACT', 'BAD_PULL']), message: z.string().max(500) }),
]);
export type ArtifactPullAnswer = z.infer<typeof artifactPullAnswerSchema>;

/** The gateway's answer to each chunk: go on, or stop (the agent sends nothing more). */
export const artifactAckSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), seq: z.number().int().nonnegative() }),
  z.object({ ok: z.literal(false), code: z.string().max(40), message: z.string().max(500) }),
]);
export type ArtifactAck = z.infer<typeof artifactAckSchema>;

const encoder = new TextEncoder();
export const encodeArtifactMessage = (message: ArtifactPull | ArtifactPullAnswer | ArtifactAck): Uint8Array =>
  encoder.encode(JSON.stringify(message));

/** Parses one small JSON message of this contract; anything larger than 4 KiB is not one. */
export function decodeArtifactMessage<T>(schema: z.ZodType<T>, data: Uint8Array): T {
  if (data.byteLength > 4096) throw new Error(`artifact message of ${data.byteLength} bytes`);
  return schema.parse(JSON.parse(new TextDecoder().decode(data)));
}

/**
 * What a snapshot records of one artifact of a cell: kept (its gzip bytes, and whether the agent
 * cut it at its bound), or missing and why (the agent had none, the transfer failed, the artifact
 * store was down). Never a reason to fail the snapshot.
 */
const artifactStateSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('stored'), bytes: z.number().int().nonnegative(), truncated: z.boolean().optional() }),
  z.object({ state: z.literal('missing'), reason: z.string().max(500) }),
]);
export type ArtifactState = z.infer<typeof artifactStateSchema>;

/** A cell's artifacts by kind, as its snapshot stores them; a kind absent was never asked for. */
export const cellArtifactsSchema = z.object({
  requests: artifactStateSchema.optional(),
  trace: artifactStateSchema.optional(),
});
export type CellArtifacts = z.infer<typeof cellArtifactsSchema>;

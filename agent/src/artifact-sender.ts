import { randomBytes } from 'node:crypto';
import type { Msg, NatsConnection, Subscription } from '@nats-io/nats-core';
import { headers as natsHeaders } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  ARTIFACT_CHUNK_BYTES,
  ARTIFACT_HEADERS,
  artifactAckSchema,
  artifactAckSubject,
  artifactPullQueueGroup,
  artifactPullSchema,
  artifactPullSubject,
  artifactPushSubject,
  decodeArtifactMessage,
  encodeArtifactMessage,
  type ArtifactPull,
  type Location,
} from '@perfwatch/common';
import type { GzippedArtifact } from './artifact-gzip.ts';
import type { ArtifactCache } from './artifact-cache.ts';

export interface ArtifactSenderDeps {
  nc: NatsConnection;
  location: Location;
  agentId: string;
  cache: ArtifactCache;
  logger: Logger;
  /** How long the gateway may take to acknowledge one chunk before the transfer is given up. */
  ackTimeoutMs?: number;
  chunkBytes?: number;
}

export interface ArtifactSender {
  stop(): Promise<void>;
}

/**
 * Answers the gateway's pulls for this agent's runs: says whether it has the artifact, then
 * sends it in chunks, each a request on the transfer's push subject, the next one only once
 * the gateway acknowledged the last (it holds one chunk per transfer).
 */
export function startArtifactSender(deps: ArtifactSenderDeps): ArtifactSender {
  const { nc, location, agentId, logger } = deps;
  const log = logger.child({ component: 'artifact-sender' });
  const sending = new Set<Promise<void>>();
  const sub: Subscription = nc.subscribe(artifactPullSubject(location, agentId), {
    queue: artifactPullQueueGroup(location),
    callback: (error, msg) => {
      // A server that refuses the subscription (a role without the artifact subjects) says so here.
      if (error) return void log.warn({ err: error }, 'cannot take artifact pulls; runs keep no artifacts');
      const transfer = answerPull(deps, msg, log).catch((error: unknown) =>
        log.warn({ err: error }, 'artifact transfer failed'),
      );
      sending.add(transfer);
      void transfer.finally(() => sending.delete(transfer));
    },
  });
  return {
    async stop() {
      await sub.drain().catch(() => undefined);
      await Promise.allSettled([...sending]);
    },
  };
}

async function answerPull(deps: ArtifactSenderDeps, msg: Msg, log: Logger): Promise<void> {
  let pull: ArtifactPull;
  try {
    pull = decodeArtifactMessage(artifactPullSchema, msg.data);
  } catch (error) {
    msg.respond(
      encodeArtifactMessage({ ok: false, code: 'BAD_PULL', message: (error as Error).message.slice(0, 500) }),
    );
    return;
  }
  const artifact = pull.agentId === deps.agentId ? deps.cache.take(pull.jobId, pull.kind) : undefined;
  if (!artifact) {
    msg.respond(
      encodeArtifactMessage({ ok: false, code: 'NO_ARTIFACT', message: `no ${pull.kind} kept for job ${pull.jobId}` }),
    );
    return;
  }
  msg.respond(encodeArtifactMessage({ ok: true, bytes: artifact.gzip.byteLength, truncated: artifact.truncated }));
  await sendChunks(deps, pull, artifact);
  log.info({ jobId: pull.jobId, kind: pull.kind, bytes: artifact.gzip.byteLength }, 'artifact sent');
}

/** The artifact's bytes in order, one acknowledged request per chunk; a refusal or silence ends it. */
async function sendChunks(
  { nc, location, ackTimeoutMs = 30_000, chunkBytes = ARTIFACT_CHUNK_BYTES }: ArtifactSenderDeps,
  pull: ArtifactPull,
  artifact: GzippedArtifact,
): Promise<void> {
  const subject = artifactPushSubject(location, pull.token);
  const bytes = artifact.gzip;
  const count = Math.max(1, Math.ceil(bytes.byteLength / chunkBytes));
  for (let seq = 0; seq < count; seq++) {
    const h = natsHeaders();
    h.set(ARTIFACT_HEADERS.seq, String(seq));
    if (seq === count - 1) h.set(ARTIFACT_HEADERS.last, '1');
    const chunk = bytes.subarray(seq * chunkBytes, Math.min(bytes.byteLength, (seq + 1) * chunkBytes));
    const reply = await nc.request(subject, chunk, {
      timeout: ackTimeoutMs,
      headers: h,
      noMux: true,
      reply: artifactAckSubject(location, randomBytes(12).toString('base64url')),
    });
    const ack = decodeArtifactMessage(artifactAckSchema, reply.data);
    if (!ack.ok) throw new Error(`the gateway stopped the transfer at chunk ${seq}: ${ack.code} ${ack.message}`);
  }
}

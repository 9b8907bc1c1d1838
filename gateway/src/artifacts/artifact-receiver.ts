import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  ARTIFACT_CONTENT_TYPES,
  ARTIFACT_MAX_BYTES,
  artifactPullAnswerSchema,
  artifactPullSubject,
  artifactPushSubject,
  decodeArtifactMessage,
  encodeArtifactMessage,
  type ArtifactPullAnswer,
  type ArtifactState,
  type Location,
} from '@perfwatch/common';
import { createChunkStream, TransferFailed } from './artifact-chunk-stream.ts';
import { ARTIFACT_MAX_INFLATED_BYTES, inflateChecked } from './inflate-check.ts';
import { ArtifactTooLarge, type ArtifactKey, type ArtifactStore } from './store/artifact-store.ts';

export interface ArtifactReceiverDeps {
  nc: NatsConnection;
  store: Pick<ArtifactStore, 'put'>;
  logger: Logger;
  /** How long the agent may take to say whether it has the artifact. */
  pullTimeoutMs?: number;
  /** Silence between two chunks past this abandons the transfer. */
  chunkTimeoutMs?: number;
  /**
   * The whole transfer past this is abandoned: a sender trickling small chunks just inside
   * chunkTimeoutMs would otherwise hold the update (and its S3 upload) for as long as it liked.
   */
  transferTimeoutMs?: number;
}

/** The run whose artifact is wanted: who made it, for which job, and where it is to be kept. */
export interface ArtifactSource {
  location: Location;
  agentId: string;
  jobId: string;
  key: ArtifactKey;
}

export interface ArtifactReceiver {
  /** Pulls one artifact of the chosen run into the store; never throws (a failure is `missing`). */
  receive(source: ArtifactSource): Promise<ArtifactState>;
}

/**
 * The gateway's side of a transfer: a push subject of its own (an unguessable token, so no
 * other sender can write into it), the pull that tells the run's agent to send on it, and the
 * chunks piped into the store as they come, one held at a time, each inflated along the way so
 * that what is kept is gzip and inflates within its bound (inflate-check.ts).
 */
export function createArtifactReceiver({
  nc,
  store,
  logger,
  pullTimeoutMs = 10_000,
  chunkTimeoutMs = 30_000,
  transferTimeoutMs = 300_000,
}: ArtifactReceiverDeps): ArtifactReceiver {
  const log = logger.child({ component: 'artifact-receiver' });
  return {
    async receive({ location, agentId, jobId, key }) {
      const { kind } = key;
      const maxBytes = ARTIFACT_MAX_BYTES[kind];
      const token = randomBytes(24).toString('base64url');
      const stream = createChunkStream({ maxBytes, chunkTimeoutMs });
      const sub = nc.subscribe(artifactPushSubject(location, token), { callback: (_e, msg) => stream.offer(msg) });
      let storing = false;
      const deadline = setTimeout(
        () => stream.fail(new TransferFailed('TOO_SLOW', `the transfer was not done within ${transferTimeoutMs} ms`)),
        transferTimeoutMs,
      );
      try {
        const answer = await pull(nc, { location, agentId, jobId, kind, token }, pullTimeoutMs);
        if (!answer.ok) {
          stream.fail(new TransferFailed(answer.code, answer.message));
          return { state: 'missing', reason: `${answer.code}: ${answer.message}`.slice(0, 500) };
        }
        if (answer.bytes > maxBytes) {
          stream.fail(new TransferFailed('TOO_LARGE', `${answer.bytes} bytes announced, past ${maxBytes}`));
          return {
            state: 'missing',
            reason: `the agent announced ${answer.bytes} bytes, past the bound of ${maxBytes}`,
          };
        }
        stream.expect(answer.bytes);
        storing = true;
        const { bytes } = await store.put(key, inflateChecked(stream, ARTIFACT_MAX_INFLATED_BYTES[kind]), {
          maxBytes,
          contentType: ARTIFACT_CONTENT_TYPES[kind],
          contentEncoding: 'gzip',
        });
        return { state: 'stored', bytes, ...(answer.truncated ? { truncated: true } : {}) };
      } catch (error) {
        const message = (error as Error).message.slice(0, 500);
        log.warn({ err: { message }, jobId, kind, location }, 'artifact not stored; recorded missing');
        return { state: 'missing', reason: storing && !isTransferFailure(error) ? STORE_FAILED : message };
      } finally {
        clearTimeout(deadline);
        // A store that failed before reading a chunk leaves one unanswered: the agent hears now, not at its timeout.
        stream.fail(new TransferFailed('STORE_FAILED', 'the gateway could not store the artifact'));
        sub.unsubscribe();
      }
    },
  };
}

/**
 * What the cell's users read when the artifact store failed a write: its own message (a path on
 * the gateway's disk, the S3 server's address) is for the gateway's log alone.
 */
export const STORE_FAILED = "the artifact store did not keep it (the gateway's log says why)";

/** A failure of the transfer itself (the agent's bytes, the bound), said as it is; the store may wrap one as its cause. */
function isTransferFailure(error: unknown): boolean {
  if (error instanceof TransferFailed || error instanceof ArtifactTooLarge) return true;
  return error instanceof Error && error.cause !== undefined && isTransferFailure(error.cause);
}

async function pull(
  nc: NatsConnection,
  { location, agentId, jobId, kind, token }: Omit<ArtifactSource, 'key'> & { kind: ArtifactKey['kind']; token: string },
  timeoutMs: number,
): Promise<ArtifactPullAnswer> {
  const reply = await nc.request(
    artifactPullSubject(location, agentId),
    encodeArtifactMessage({ v: 1, jobId, agentId, kind, token }),
    { timeout: timeoutMs },
  );
  return decodeArtifactMessage(artifactPullAnswerSchema, reply.data);
}

import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { ARTIFACT_CONTENT_TYPES, ARTIFACT_MAX_BYTES, type InProcessAgent } from '@perfwatch/common';
import { STORE_FAILED, type ArtifactReceiver } from './artifact-receiver.ts';
import type { ArtifactStore } from './store/artifact-store.ts';

/**
 * `perfwatch start`'s receiver: its agents live in this process, so the chosen run's artifact is
 * taken from the agent's cache and written to the store with no transfer in between. Outcomes
 * as the NATS receiver's: never a throw, a failure is `missing`.
 */
export function createLocalArtifactReceiver({
  agents,
  store,
  logger,
}: {
  agents: readonly InProcessAgent[];
  store: Pick<ArtifactStore, 'put'>;
  logger: Logger;
}): ArtifactReceiver {
  const log = logger.child({ component: 'artifact-receiver' });
  return {
    async receive({ agentId, jobId, key }) {
      const agent = agents.find((a) => a.agentId === agentId);
      const artifact = agent?.takeArtifact?.(jobId, key.kind);
      if (!artifact)
        return { state: 'missing', reason: `NO_ARTIFACT: agent ${agentId} has no ${key.kind} of this run` };
      try {
        const { bytes } = await store.put(key, Readable.from([artifact.gzip]), {
          maxBytes: ARTIFACT_MAX_BYTES[key.kind],
          contentType: ARTIFACT_CONTENT_TYPES[key.kind],
          contentEncoding: 'gzip',
        });
        return { state: 'stored', bytes, ...(artifact.truncated ? { truncated: true } : {}) };
      } catch (error) {
        // The store's own message (a path, a server's address) is for the log; the cell says it plainly.
        const message = (error as Error).message.slice(0, 500);
        log.warn({ err: { message }, jobId, kind: key.kind }, 'artifact not stored; recorded missing');
        return { state: 'missing', reason: STORE_FAILED };
      }
    },
  };
}

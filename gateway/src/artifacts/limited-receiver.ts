import pLimit from 'p-limit';
import type { ArtifactReceiver } from './artifact-receiver.ts';

/**
 * At most `atOnce` transfers into the artifact store at a time, the others waiting before their
 * pull is even sent (so no agent waits on an acknowledgement meanwhile, and the agent's cache keeps
 * the artifact for 15 minutes). What a transfer holds is the store's: a chunk for fs, a 5 MiB
 * multipart part and its copy for S3 (bench/results.md, "Artifacts"); the bound keeps the sum of
 * them flat however many cells end at once.
 */
export function limitedReceiver(receiver: ArtifactReceiver, atOnce: number): ArtifactReceiver {
  const limit = pLimit(atOnce);
  return { receive: (source) => limit(() => receiver.receive(source)) };
}

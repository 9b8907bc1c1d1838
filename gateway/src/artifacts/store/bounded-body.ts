import { ArtifactTooLarge } from './artifact-store.ts';

export interface BoundedBody extends AsyncIterable<Uint8Array> {
  /** The bytes passed through so far (all of them once the iteration ends). */
  bytes(): number;
}

/**
 * The body passed through chunk by chunk, counted: the chunk that takes it past `maxBytes` throws
 * ArtifactTooLarge instead of being passed on, so a store's write fails before it keeps anything.
 */
export function boundedBody(body: AsyncIterable<Uint8Array>, maxBytes: number): BoundedBody {
  let total = 0;
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      total += chunk.byteLength;
      if (total > maxBytes) throw new ArtifactTooLarge(maxBytes);
      yield chunk;
    }
  }
  const iterable = counted();
  return { [Symbol.asyncIterator]: () => iterable, bytes: () => total };
}

import { gunzipSync } from 'node:zlib';

/**
 * The length a gzip member's trailer claims for its content (ISIZE), 0 for bytes too short to
 * have one. Whoever sent the bytes wrote it: a size to plan for, never a bound that holds.
 */
export function gzipClaimedLength(bytes: Uint8Array): number {
  if (bytes.byteLength < 18) return 0;
  return Buffer.from(bytes.buffer, bytes.byteOffset + bytes.byteLength - 4, 4).readUInt32LE(0);
}

/**
 * Inflates on this thread into one output buffer of the size the trailer claims (at most
 * `maxChunk`), not zlib's 16 kB chunks joined at the end; never more than `maxOutput` in all,
 * whatever the trailer says. Throws zlib's errors as they are.
 */
export function gunzipSized(
  bytes: Uint8Array,
  { maxOutput, maxChunk }: { maxOutput: number; maxChunk: number },
): Buffer {
  const chunkSize = Math.max(64, Math.min(gzipClaimedLength(bytes) + 1, maxChunk));
  return gunzipSync(bytes, { chunkSize, maxOutputLength: maxOutput });
}

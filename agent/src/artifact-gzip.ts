import { constants, createGzip } from 'node:zlib';

/** An artifact as the agent keeps it: gzip bytes, and whether its pieces were cut at the bound. */
export interface GzippedArtifact {
  gzip: Uint8Array;
  truncated: boolean;
  /** Pieces written, of `total`. */
  pieces: number;
  total: number;
}

/** Raw bytes written between two flushes: the bound is checked at each flush. */
const BATCH_BYTES = 256 * 1024;
/** Deflate's worst case is a little over its input (stored blocks); this covers it and the trailer. */
const worstCase = (raw: number) => Math.ceil(raw * 1.01) + 1024;

/**
 * `pieces` (strings, in order; `count` of them) gzipped without ever passing `maxBytes`: written
 * in batches, each flushed so the bytes so far are exact, and a batch goes in only if even its
 * worst case fits. Past the bound the remaining pieces are left out, never even made (a lazy
 * iterable: a page's trace may be far past the bound), and `closing(truncated)` ends the text,
 * so what is kept still parses (and says it was cut).
 */
export async function boundedGzip(
  pieces: Iterable<string>,
  count: number,
  maxBytes: number,
  closing: (truncated: boolean, written: number) => string,
): Promise<GzippedArtifact> {
  const gzip = createGzip({ level: 6 });
  const out: Buffer[] = [];
  let emitted = 0;
  gzip.on('data', (chunk: Buffer) => {
    out.push(chunk);
    emitted += chunk.byteLength;
  });
  const ended = new Promise<void>((resolve, reject) => gzip.on('end', resolve).on('error', reject));
  const flush = () => new Promise<void>((resolve) => gzip.flush(constants.Z_SYNC_FLUSH, () => resolve()));
  // The closing text must always fit: it is kept out of the budget for pieces.
  const reserve = worstCase(Buffer.byteLength(closing(true, count)) + 64);
  let written = 0;
  let batch: string[] = [];
  let batchBytes = 0;
  let cut = false;
  for (const piece of pieces) {
    const bytes = Buffer.byteLength(piece);
    if (batchBytes + bytes > BATCH_BYTES || emitted + worstCase(batchBytes + bytes) + reserve > maxBytes) {
      gzip.write(batch.join(''));
      await flush();
      batch = [];
      batchBytes = 0;
      if (emitted + worstCase(bytes) + reserve > maxBytes) {
        cut = true;
        break;
      }
    }
    batch.push(piece);
    batchBytes += bytes;
    written++;
  }
  gzip.end(batch.join('') + closing(cut, written));
  await ended;
  return { gzip: Buffer.concat(out), truncated: cut, pieces: written, total: count };
}

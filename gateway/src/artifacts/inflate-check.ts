import { createGunzip } from 'node:zlib';
import type { ArtifactKind } from '@perfwatch/common';
import { TransferFailed } from './artifact-chunk-stream.ts';

const MiB = 1024 * 1024;

/**
 * Inflated bytes an artifact may hold: 32 times its gzip bound (ARTIFACT_MAX_BYTES). Real ones
 * inflate about ten times (a trace of 3–8 MB gzipped is 30–80 MB of JSON); gzip can inflate a
 * thousandfold, and every reader inflates what is stored: /v1/artifacts for a client that takes
 * no gzip, /v1/compare, and the dashboard's browser, which holds the whole trace or requests.
 */
export const ARTIFACT_MAX_INFLATED_BYTES: Readonly<Record<ArtifactKind, number>> = {
  requests: 64 * MiB,
  trace: 640 * MiB,
};

/**
 * `body` passed through chunk by chunk while a gunzip reads along: a chunk is passed on only once
 * what it inflates to is counted, so a body that is not gzip, ends before its gzip does, or
 * inflates past `maxInflatedBytes` throws (TransferFailed) before the store keeps it. The agent
 * that sent it is another operator's: what it sends is checked, never trusted.
 */
export async function* inflateChecked(
  body: AsyncIterable<Uint8Array>,
  maxInflatedBytes: number,
): AsyncGenerator<Uint8Array> {
  const gunzip = createGunzip();
  let inflated = 0;
  let failure: TransferFailed | null = null;
  const stop = (error: TransferFailed) => {
    failure ??= error;
    gunzip.destroy();
  };
  gunzip.on('data', (chunk: Buffer) => {
    inflated += chunk.byteLength;
    if (inflated > maxInflatedBytes)
      stop(new TransferFailed('INFLATES_TOO_LARGE', `the artifact inflates past ${maxInflatedBytes} bytes`));
  });
  gunzip.on('error', (error) => stop(new TransferFailed('NOT_GZIP', `the artifact is not gzip: ${error.message}`)));
  // Settles once gunzip took `chunk` whole, or stopped (destroyed: no callback may come).
  const settled = (act: (done: () => void) => void) =>
    new Promise<void>((resolve) => {
      gunzip.once('close', resolve);
      act(() => {
        gunzip.off('close', resolve);
        resolve();
      });
    });
  try {
    for await (const chunk of body) {
      if (!failure) await settled((done) => gunzip.write(chunk, () => done()));
      if (failure) throw failure;
      yield chunk;
    }
    if (!failure) await settled((done) => gunzip.once('end', done).end());
    if (failure) throw failure;
    // A gzip cut short ends in an error (caught above), never in 'end'.
    if (!gunzip.readableEnded)
      throw new TransferFailed('NOT_GZIP', 'the artifact is not gzip: it ends before its gzip does');
  } finally {
    gunzip.destroy();
  }
}

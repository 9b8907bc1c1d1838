import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { CellArtifacts } from '@perfwatch/common';
import { artifactGone, artifactRefusal, artifactStoreDown } from './artifact-refusals.ts';
import type { ArtifactClock } from './artifact-states.ts';
import type { ArtifactKey, ArtifactStore, StoredArtifact } from './store/artifact-store.ts';

/** What a download is of: the artifact's key, what its snapshot recorded of it, and when it was taken. */
export interface ArtifactDownload {
  key: ArtifactKey;
  artifacts: CellArtifacts | undefined;
  snapshotDate: Date;
  /** The file name a browser saves it as; absent: shown inline. */
  filename?: string;
}

/**
 * Streams one artifact from the store to the caller, never holding it whole: the stored gzip
 * passed through as it is (`Content-Encoding: gzip`) when the request's Accept-Encoding takes
 * gzip, inflated on the way out otherwise (curl without --compressed, a plain download). A
 * store failure before the first byte is a 503 in the envelope; one after it cuts the answer
 * short, which the client sees as a body shorter than it should be.
 */
export async function sendArtifact(
  req: Request,
  res: Response,
  { store, clock, logger }: { store: Pick<ArtifactStore, 'get'>; clock: ArtifactClock; logger: Logger },
  download: ArtifactDownload,
): Promise<void> {
  const { key } = download;
  const refusal = artifactRefusal(key.kind, download.artifacts, download.snapshotDate, clock);
  if (refusal) throw refusal;
  let stored: StoredArtifact | null;
  try {
    stored = await store.get(key);
  } catch (error) {
    logger.warn({ err: error, kind: key.kind }, 'the artifact store failed a read');
    throw artifactStoreDown(error);
  }
  if (!stored) throw artifactGone(key.kind);
  const passThrough = stored.contentEncoding === 'gzip' && takesGzip(req);
  res.status(200);
  res.set({
    'Content-Type': stored.contentType,
    Vary: 'Accept-Encoding',
    'Cache-Control': 'private, no-cache',
    // The bytes are the measured page's (its URLs, its trace's strings), served from the gateway's
    // origin: never sniffed as HTML, and sandboxed should a browser render them all the same.
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; sandbox",
  });
  // Quoted as it is: traceFileName makes it of letters, digits, dots and dashes alone.
  if (download.filename) res.set('Content-Disposition', `attachment; filename="${download.filename}"`);
  if (passThrough) res.set({ 'Content-Encoding': 'gzip', 'Content-Length': String(stored.bytes) });
  const inflate = stored.contentEncoding === 'gzip' && !passThrough;
  try {
    await (inflate ? pipeline(stored.body, createGunzip(), res) : pipeline(stored.body, res));
  } catch (error) {
    // The caller left, or the store failed mid-way: the answer is cut, nothing more can be said.
    if ((error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE')
      logger.warn({ err: error, kind: key.kind }, 'an artifact download was cut short');
    res.destroy();
  }
}

/**
 * Whether the caller takes gzip: only when it says so. A request without Accept-Encoding gets
 * the bytes as they are meant to be read (HTTP allows any coding then, but a plain download
 * saved as gzip would not open).
 */
export function takesGzip(req: Request): boolean {
  return req.get('accept-encoding') !== undefined && req.acceptsEncodings('gzip', 'identity') === 'gzip';
}

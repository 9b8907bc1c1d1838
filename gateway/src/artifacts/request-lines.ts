import { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { artifactRequestLineSchema, artifactRequestsEndSchema } from '@perfwatch/common';
import type { StoredArtifact } from './store/artifact-store.ts';
import { requestKey } from './request-key.ts';

/** One request as a comparison reads it off a requests artifact. */
export interface ComparedRequest {
  url: string;
  /** requestKey(url): what it is matched by. */
  key: string;
  entity?: string;
  resourceType?: string;
  transferSize: number;
  /** From the request's start on the network to its last byte, ms. */
  duration: number;
}

/** A side's requests, and whether they are all of the run's (the agent's bound, or this read's, cut them). */
export interface RequestSide {
  requests: ComparedRequest[];
  truncated: boolean;
}

/**
 * How much of a requests artifact a comparison reads. The artifact is at most 2 MiB gzipped
 * (ARTIFACT_MAX_BYTES.requests, about 5,000 requests as the agent writes them), but gzip inflates
 * a thousandfold: the read stops at these bounds, whatever the bytes say.
 */
const REQUEST_READ_LIMITS = {
  /** Requests kept per side: twice what the agent's bound holds of real pages. */
  maxLines: 10_000,
  /** A line longer is skipped (the agent's are under 3 kB: URLs cut at 2,048 characters). */
  maxLineBytes: 16 * 1024,
  /** Inflated bytes read per side. */
  maxInflatedBytes: 32 * 1024 * 1024,
};

const NEWLINE = 0x0a;

/** A line as the agent wrote it: a request with a URL, the end line, or null for anything else. */
function parseLine(line: Buffer): ComparedRequest | { truncated: boolean } | null {
  let json: unknown;
  try {
    json = JSON.parse(line.toString('utf8'));
  } catch {
    return null;
  }
  const end = artifactRequestsEndSchema.safeParse(json);
  if (end.success) return { truncated: end.data.truncated };
  const parsed = artifactRequestLineSchema.safeParse(json);
  if (!parsed.success || !parsed.data.url) return null;
  const { url, entity, resourceType, transferSize, networkRequestTime, networkEndTime, rendererStartTime } =
    parsed.data;
  const start = networkRequestTime ?? rendererStartTime;
  return {
    url,
    key: requestKey(url),
    ...(entity ? { entity } : {}),
    ...(resourceType ? { resourceType } : {}),
    transferSize: Math.max(0, transferSize ?? 0),
    duration: start !== undefined && networkEndTime !== undefined ? Math.max(0, networkEndTime - start) : 0,
  };
}

/**
 * A stored requests artifact read line by line as it streams in (never whole), each line parsed
 * with the agent's own schema; the stream is let go at the first bound reached.
 */
export async function readRequestLines(
  stored: Pick<StoredArtifact, 'body' | 'contentEncoding'>,
  limits = REQUEST_READ_LIMITS,
): Promise<RequestSide> {
  const source = Readable.from(stored.body as AsyncIterable<Buffer>, { objectMode: false });
  const inflated = stored.contentEncoding === 'gzip' ? pipeline(source, createGunzip(), () => {}) : source;
  const side: RequestSide = { requests: [], truncated: false };
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let skipping = false;
  let read = 0;
  const take = (line: Buffer) => {
    const parsed = line.byteLength > 0 ? parseLine(line) : null;
    if (parsed && 'url' in parsed) side.requests.push(parsed);
    else if (parsed) side.truncated ||= parsed.truncated;
  };
  try {
    for await (const chunk of inflated as AsyncIterable<Buffer>) {
      read += chunk.byteLength;
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        if (!skipping && pendingBytes + nl - start <= limits.maxLineBytes)
          take(Buffer.concat([...pending, chunk.subarray(start, nl)]));
        [pending, pendingBytes, skipping, start] = [[], 0, false, nl + 1];
        if (side.requests.length >= limits.maxLines) return { ...side, truncated: true };
      }
      const rest = chunk.byteLength - start;
      if (!skipping && pendingBytes + rest > limits.maxLineBytes) [pending, pendingBytes, skipping] = [[], 0, true];
      else if (!skipping && rest > 0)
        [pending, pendingBytes] = [[...pending, Buffer.from(chunk.subarray(start))], pendingBytes + rest];
      if (read > limits.maxInflatedBytes) return { ...side, truncated: true };
    }
  } finally {
    (inflated as Readable).destroy();
  }
  if (!skipping && pendingBytes > 0) take(Buffer.concat(pending));
  return side;
}

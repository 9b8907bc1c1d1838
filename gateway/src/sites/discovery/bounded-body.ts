import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Refused } from './discovery-bounds.ts';

/** Bytes of one document: as they came over the wire, and once decompressed. */
export interface ByteCounts {
  wire: number;
  decoded: number;
}

/** Yields `source` up to `limit` bytes (the part within it too), then refuses. */
async function* upTo(
  source: AsyncIterable<Buffer>,
  limit: number,
  count: (n: number) => number,
  refusal: () => Refused,
): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    const before = count(0);
    const total = count(chunk.length);
    if (total > limit) {
      if (limit > before) yield chunk.subarray(0, limit - before);
      throw refusal();
    }
    yield chunk;
  }
}

/** Gunzips what starts with gzip's magic bytes (a `.gz` sitemap served as it is); passes the rest. */
async function* gunzipByMagic(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const iterator = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await iterator.next();
    if (next.done) break;
    head = Buffer.concat([head, next.value]);
  }
  async function* whole() {
    if (head.length > 0) yield head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  if (head[0] === 0x1f && head[1] === 0x8b) yield* gunzip(whole());
  else yield* whole();
}

/** Gunzipped as it is pulled; an error on either side (a refusal above, corrupt gzip) ends both. */
const gunzip = (source: AsyncIterable<Buffer>): AsyncIterable<Buffer> =>
  pipeline(Readable.from(source), createGunzip(), () => undefined);

/**
 * A body decoded (Content-Encoding gzip, then gzip by its magic bytes) and bounded twice: on the
 * wire and once decompressed, each at `limit`. Decompression is pulled a chunk at a time, so a
 * gzip bomb produces no more than the bound (and one zlib chunk) before it is refused.
 */
export function decodedBody(
  url: string,
  body: AsyncIterable<Buffer>,
  contentEncoding: string,
  { limit, counts }: { limit: number; counts: ByteCounts },
): AsyncIterable<Buffer> {
  const refuse = (where: string) => () =>
    new Refused(url, `larger than ${limit} bytes ${where}: read no further`, 'bytes');
  const wire = upTo(body, limit, (n) => (counts.wire += n), refuse('as sent'));
  const encoding = contentEncoding.trim().toLowerCase();
  let decoded: AsyncIterable<Buffer>;
  if (encoding === 'gzip' || encoding === 'x-gzip') decoded = gunzipByMagic(gunzip(wire));
  else if (encoding === '' || encoding === 'identity') decoded = gunzipByMagic(wire);
  else throw new Refused(url, `sent in Content-Encoding ${encoding.slice(0, 40)}, which discovery does not read`);
  return upTo(decoded, limit, (n) => (counts.decoded += n), refuse('once decompressed'));
}

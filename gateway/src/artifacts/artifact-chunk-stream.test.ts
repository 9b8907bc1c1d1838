import { describe, expect, it } from 'vitest';
import { ARTIFACT_HEADERS, artifactAckSchema, type ArtifactAck } from '@perfwatch/common';
import { createChunkStream, type ChunkMsg } from './artifact-chunk-stream.ts';

/** A chunk as NATS hands it over, remembering how the stream answered it. */
function chunk(seq: number | string, bytes: number, last = false) {
  const answers: ArtifactAck[] = [];
  const headers = new Map<string, string>([[ARTIFACT_HEADERS.seq, String(seq)]]);
  if (last) headers.set(ARTIFACT_HEADERS.last, '1');
  const msg: ChunkMsg = {
    data: new Uint8Array(bytes),
    headers: { get: (name) => headers.get(name) ?? '' },
    respond: (data) => {
      answers.push(artifactAckSchema.parse(JSON.parse(new TextDecoder().decode(data))));
      return true;
    },
  };
  return { msg, answers };
}

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<number> {
  let total = 0;
  for await (const piece of stream) total += piece.byteLength;
  return total;
}

const options = { maxBytes: 1024, chunkTimeoutMs: 200, chunkBytes: 256 };

describe('a transfer’s chunk stream', () => {
  it('acknowledges a chunk only once the store has taken it', async () => {
    const stream = createChunkStream(options);
    const iterator = stream[Symbol.asyncIterator]();
    const first = chunk(0, 256);
    stream.offer(first.msg);
    expect((await iterator.next()).value).toHaveLength(256);
    expect(first.answers).toEqual([]);
    // Asking for the next chunk means the store wrote this one: now the sender hears.
    const second = iterator.next();
    expect(first.answers).toEqual([{ ok: true, seq: 0 }]);
    const last = chunk(1, 10, true);
    stream.offer(last.msg);
    expect((await second).value).toHaveLength(10);
    expect((await iterator.next()).done).toBe(true);
    expect(last.answers).toEqual([{ ok: true, seq: 1 }]);
  });

  it.each([
    ['a chunk out of order', [chunk(0, 10), chunk(2, 10, true)], 'BAD_SEQ'],
    ['a chunk over the chunk size', [chunk(0, 257, true)], 'CHUNK_TOO_LARGE'],
    ['more bytes than the bound', [0, 1, 2, 3, 4].map((i) => chunk(i, 256, i === 4)), 'TOO_LARGE'],
    ['an empty chunk that is not the last', [chunk(0, 0)], 'EMPTY_CHUNK'],
    ['a chunk without a sequence number', [chunk('', 10, true)], 'BAD_SEQ'],
  ])('ends the transfer on %s, telling the sender', async (_why, chunks, code) => {
    const stream = createChunkStream(options);
    const ended = expect(readAll(stream)).rejects.toMatchObject({ code });
    for (const { msg } of chunks) {
      stream.offer(msg);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await ended;
    expect(chunks.at(-1)!.answers).toEqual([expect.objectContaining({ ok: false, code })]);
  });

  it('ends a sender that does not wait for its acknowledgements (it would fill the gateway)', async () => {
    const stream = createChunkStream(options);
    const iterator = stream[Symbol.asyncIterator]();
    const flood = [chunk(0, 100), chunk(1, 100)];
    for (const { msg } of flood) stream.offer(msg);
    await expect(iterator.next()).rejects.toMatchObject({ code: 'OVERRUN' });
    expect(flood[1]!.answers[0]).toMatchObject({ ok: false, code: 'OVERRUN' });
  });

  it('gives up on a sender that goes quiet, and refuses what it sends later', async () => {
    const stream = createChunkStream(options);
    const reading = readAll(stream);
    stream.offer(chunk(0, 100).msg);
    await expect(reading).rejects.toMatchObject({ code: 'STALLED' });
    const late = chunk(1, 100, true);
    stream.offer(late.msg);
    expect(late.answers[0]).toMatchObject({ ok: false });
  });

  it('refuses a last chunk that ends short of the length the agent announced', async () => {
    const stream = createChunkStream(options);
    stream.expect(300);
    const reading = readAll(stream);
    stream.offer(chunk(0, 100, true).msg);
    await expect(reading).rejects.toMatchObject({ code: 'BAD_LENGTH' });
  });

  it('tells the sender when the store stopped reading', async () => {
    const stream = createChunkStream(options);
    const first = chunk(0, 100);
    stream.offer(first.msg);
    for await (const _piece of stream) break;
    expect(first.answers[0]).toMatchObject({ ok: false, code: 'STORE_FAILED' });
  });
});

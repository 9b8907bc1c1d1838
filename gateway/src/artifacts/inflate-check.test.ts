import { randomBytes } from 'node:crypto';
import { createGzip, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inflateChecked } from './inflate-check.ts';

async function* chunksOf(bytes: Uint8Array, size = 64 * 1024): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size);
}

async function passed(body: AsyncIterable<Uint8Array>, max: number): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of inflateChecked(body, max)) out.push(Buffer.from(chunk));
  return Buffer.concat(out);
}

/** `inflated` zero bytes gzipped (a bomb: about a thousandth of that), made without holding them. */
async function zeros(inflated: number): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gzip.on('data', (chunk: Buffer) => out.push(chunk));
  const block = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < inflated; written += block.byteLength)
    if (!gzip.write(block.subarray(0, Math.min(block.byteLength, inflated - written))))
      await new Promise((resolve) => gzip.once('drain', resolve));
  await new Promise((resolve) => gzip.once('end', resolve).end());
  return Buffer.concat(out);
}

describe('inflateChecked', () => {
  it('passes a gzip through byte for byte, chunk by chunk', async () => {
    const gzip = gzipSync(randomBytes(300_000).toString('hex'));
    expect((await passed(chunksOf(gzip), 1024 * 1024)).equals(gzip)).toBe(true);
  });

  it('refuses a gzip bomb: 2 MiB of zeros gzipped to a few kB, past a bound of 1 MiB', async () => {
    const bomb = await zeros(2 * 1024 * 1024);
    expect(bomb.byteLength).toBeLessThan(10_000);
    await expect(passed(chunksOf(bomb, 1024), 1024 * 1024)).rejects.toThrow(/inflates past 1048576 bytes/);
  });

  it('refuses what is not gzip, and a gzip cut short', async () => {
    await expect(passed(chunksOf(Buffer.from('{"url":"https://a.example/"}\n')), 1024)).rejects.toThrow(/not gzip/);
    const gzip = gzipSync(randomBytes(10_000));
    await expect(passed(chunksOf(gzip.subarray(0, gzip.byteLength - 100)), 1024 * 1024)).rejects.toThrow(/not gzip/);
  });
});

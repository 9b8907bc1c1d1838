import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodedBody } from './bounded-body.ts';
import { Refused } from './discovery-bounds.ts';

async function* chunks(bytes: Buffer, size = 16 * 1024) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function drain(body: AsyncIterable<Buffer>) {
  let bytes = 0;
  try {
    for await (const chunk of body) bytes += chunk.length;
    return { bytes };
  } catch (error) {
    return { bytes, error };
  }
}

describe('decodedBody', () => {
  const xml = Buffer.from('<urlset><url><loc>https://shop.example/</loc></url></urlset>');

  it('passes plain bodies and gunzips by Content-Encoding, by magic bytes, and both at once', async () => {
    for (const [body, encoding] of [
      [xml, ''],
      [gzipSync(xml), 'gzip'],
      [gzipSync(xml), ''],
      [gzipSync(gzipSync(xml)), 'gzip'],
    ] as const) {
      const counts = { wire: 0, decoded: 0 };
      const out: Buffer[] = [];
      for await (const c of decodedBody('u', chunks(body, 5), encoding, { limit: 1000, counts })) out.push(c);
      expect(Buffer.concat(out).toString()).toBe(xml.toString());
      expect(counts).toEqual({ wire: body.length, decoded: xml.length });
    }
  });

  it('stops a gzip bomb at the bound of decompressed bytes, a zlib chunk at a time', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const counts = { wire: 0, decoded: 0 };
    const limit = 1024 * 1024;
    const { bytes, error } = await drain(decodedBody('u', chunks(bomb), 'gzip', { limit, counts }));
    expect(error).toBeInstanceOf(Refused);
    expect((error as Refused).message).toBe(`larger than ${limit} bytes once decompressed: read no further`);
    expect((error as Refused).bound).toBe('bytes');
    expect(bytes).toBe(limit);
    // zlib is pulled a chunk at a time: a few of its chunks past the bound at most.
    expect(counts.decoded).toBeLessThan(limit + 256 * 1024);
  });

  it('stops a plain body at the bound as sent, yielding what came within it', async () => {
    const counts = { wire: 0, decoded: 0 };
    const { bytes, error } = await drain(
      decodedBody('u', chunks(Buffer.alloc(100_000, 32)), '', { limit: 50_000, counts }),
    );
    expect((error as Refused).message).toContain('larger than 50000 bytes as sent');
    expect(bytes).toBe(50_000);
  });

  it('refuses an encoding it does not read', () => {
    expect(() => decodedBody('u', chunks(xml), 'br', { limit: 1000, counts: { wire: 0, decoded: 0 } })).toThrow(
      'Content-Encoding br',
    );
  });
});

import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BadResultBytes, inflateResult, ResultBytes } from './result-bytes.ts';

const gz = (text: string) => gzipSync(Buffer.from(text));

describe('ResultBytes', () => {
  it("writes each result's own JSON after its check, however often it is asked for", () => {
    const texts = Array.from({ length: 50 }, (_, n) =>
      JSON.stringify({ lighthouseVersion: '13.0.0', n, text: 'é'.repeat(n * 100) }),
    );
    const results = texts.map((text) => ResultBytes.fromGzip(gz(text)));
    for (const r of results) r.check();
    // In another order than checked: what was kept for one result is never another's.
    for (const n of [7, 3, 49, 0, 7]) expect(results[n]!.json().toString('utf8')).toBe(texts[n]);
    expect(results[3]!.json().toString('utf8')).toBe(texts[3]);
  });

  it('refuses bytes that are not one JSON object, at the check and when written', () => {
    for (const text of ['{"a":1}{"b":2}', '{"a":1', '[1]', '{"a":"\u0001"}']) {
      const r = ResultBytes.fromGzip(gz(text));
      expect(() => r.check(), text).toThrow(BadResultBytes);
      expect(() => r.json(), text).toThrow(BadResultBytes);
    }
  });

  it('inflates a result, and refuses one whose gzip trailer lies about its length or that is not gzip', () => {
    const text = JSON.stringify({ a: 'x'.repeat(5_000) });
    const lying = gz(text);
    lying.writeUInt32LE(3, lying.byteLength - 4);
    expect(() => inflateResult(lying)).toThrow(BadResultBytes);
    const honest = gz(text);
    expect(inflateResult(honest).toString('utf8')).toBe(text);
    expect(() => inflateResult(Buffer.from('not gzip at all, not at all'))).toThrow(/not gzip|does not inflate/);
  });
});

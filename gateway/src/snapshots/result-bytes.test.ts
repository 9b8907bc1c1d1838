import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { BadResultBytes, inflateResult, releaseResult, ResultBytes, withStoredResult } from './result-bytes.ts';

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

describe('withStoredResult', () => {
  it('inflates the stored JSON when it is first asked for, and reads the result against the schema only when asked', () => {
    const lhr = loadLhr('mobile', 1);
    const cell = withStoredResult({ device: 'mobile' }, gz(JSON.stringify(lhr)));
    expect(JSON.parse(cell.lighthouseJson.toString('utf8'))).toEqual(lhr);
    expect(cell.lighthouse.finalDisplayedUrl).toBe(lhr.finalDisplayedUrl);
    expect(cell.device).toBe('mobile');
    // One JSON object that is no Lighthouse result: written as it is, refused when read.
    const odd = withStoredResult({}, gz('{"not":"a result"}'));
    expect(odd.lighthouseJson.toString('utf8')).toBe('{"not":"a result"}');
    expect(() => odd.lighthouse).toThrow();
  });

  it('refuses a stored result that is not one JSON object when it is read, and writes one in another encoding as its text', () => {
    for (const text of ['{"a":1}{"b":2}', '[1]', '{"a":']) {
      const cell = withStoredResult({}, gz(text));
      expect(() => cell.lighthouseJson, text).toThrow(BadResultBytes);
    }
    const latin1 = Buffer.from([...Buffer.from('{"a":"'), 0xe9, ...Buffer.from('"}')]);
    expect(withStoredResult({}, gzipSync(latin1)).lighthouseJson.toString('utf8')).toBe('{"a":"\ufffd"}');
  });
});

describe('releaseResult', () => {
  it("hands back a large result's memory at once, and leaves a small one (its memory may be shared) alone", () => {
    const large = gunzipSync(gzipSync(Buffer.alloc(2 * 1024 * 1024, 0x20)));
    const before = process.memoryUsage().arrayBuffers;
    releaseResult(large);
    expect(large.byteLength).toBe(0);
    expect(before - process.memoryUsage().arrayBuffers).toBeGreaterThanOrEqual(2 * 1024 * 1024);
    releaseResult(large);
    const small = Buffer.from('{"a":1}');
    const neighbour = Buffer.from('{"b":2}');
    releaseResult(small);
    expect(small.toString()).toBe('{"a":1}');
    expect(neighbour.toString()).toBe('{"b":2}');
  });
});

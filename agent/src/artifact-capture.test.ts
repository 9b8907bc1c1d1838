import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ARTIFACT_MAX_BYTES } from '@perfwatch/common';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { captureRequests, captureTrace } from './artifact-capture.ts';

const lines = (gzip: Uint8Array) =>
  gunzipSync(gzip)
    .toString('utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const itemsOf = (lhr: ReturnType<typeof loadLhr>) =>
  (lhr.audits['network-requests']!.details as { items: Array<Record<string, unknown>> }).items;

/** A page of `count` requests made from a real run's, each with a URL of its own. */
function pageOf(count: number) {
  const lhr = loadLhr('mobile', 1);
  const real = itemsOf(lhr);
  const items = Array.from({ length: count }, (_, i) => ({
    ...real[i % real.length],
    url: `https://cdn${i % 40}.example.com/assets/chunk-${i}-${(i * 7919).toString(36)}.js?v=${i}`,
  }));
  lhr.audits['network-requests']!.details = { type: 'table', items };
  return lhr;
}

describe('the requests artifact', () => {
  it('keeps every request of a real run with the fields a waterfall needs, and says it has them all', async () => {
    const lhr = loadLhr('mobile', 1);
    const captured = (await captureRequests(lhr))!;
    const [first, ...rest] = lines(captured.gzip);
    const end = rest.pop();
    expect(rest.length + 1).toBe(itemsOf(lhr).length);
    expect(first).toMatchObject({ url: itemsOf(lhr)[0]!['url'], resourceType: 'Document' });
    expect(Object.keys(first!)).toEqual(
      expect.arrayContaining(['url', 'protocol', 'networkRequestTime', 'networkEndTime', 'transferSize', 'mimeType']),
    );
    expect(end).toEqual({ end: true, requests: itemsOf(lhr).length, written: itemsOf(lhr).length, truncated: false });
    expect(captured.truncated).toBe(false);
  });

  it('holds a page of 5,000 requests well within its bound', async () => {
    const captured = (await captureRequests(pageOf(5000)))!;
    expect(captured.truncated).toBe(false);
    expect(captured.gzip.byteLength).toBeLessThan(ARTIFACT_MAX_BYTES.requests / 2);
    expect(lines(captured.gzip)).toHaveLength(5001);
  });

  it('past its bound keeps the first requests, ends with a marker, and never passes the bound', async () => {
    const maxBytes = 64 * 1024;
    const captured = (await captureRequests(pageOf(20_000), maxBytes))!;
    expect(captured.gzip.byteLength).toBeLessThanOrEqual(maxBytes);
    const read = lines(captured.gzip);
    const end = read.pop();
    expect(end).toMatchObject({ end: true, requests: 20_000, truncated: true });
    expect(end!['written']).toBe(read.length);
    expect(read.length).toBeGreaterThan(100);
  });

  it('cuts hostile field values (a URL of a megabyte) instead of keeping them', async () => {
    const lhr = loadLhr('mobile', 1);
    itemsOf(lhr)[0]!['url'] = `https://example.com/${'a'.repeat(1_000_000)}`;
    itemsOf(lhr)[1]!['transferSize'] = 'lots';
    const [first, second] = lines((await captureRequests(lhr))!.gzip);
    expect(String(first!['url']).length).toBeLessThanOrEqual(2049);
    expect(second!['transferSize']).toBeUndefined();
  });
});

describe('the trace artifact', () => {
  const trace = (count: number) => ({
    traceEvents: Array.from({ length: count }, (_, i) => ({
      name: 'ResourceSendRequest',
      ph: 'X',
      ts: 1_000_000 + i * 17,
      dur: (i * 31) % 997,
      pid: 1,
      tid: 7,
      args: { data: { requestId: `r${i}`, url: `https://example.com/${(i * 104729).toString(36)}` } },
    })),
  });

  it('is a trace DevTools opens: every event, in order', async () => {
    const captured = (await captureTrace(trace(2000)))!;
    const parsed = JSON.parse(gunzipSync(captured.gzip).toString('utf8')) as {
      traceEvents: unknown[];
      metadata: object;
    };
    expect(parsed.traceEvents).toEqual(trace(2000).traceEvents);
    expect(parsed.metadata).toMatchObject({ perfwatchTruncated: false, perfwatchEvents: 2000 });
  });

  it('past its bound is cut at an event, still parses, and says so', async () => {
    const maxBytes = 48 * 1024;
    const captured = (await captureTrace(trace(100_000), maxBytes))!;
    expect(captured.gzip.byteLength).toBeLessThanOrEqual(maxBytes);
    const parsed = JSON.parse(gunzipSync(captured.gzip).toString('utf8')) as {
      traceEvents: unknown[];
      metadata: { perfwatchTruncated: boolean; perfwatchEvents: number };
    };
    expect(parsed.metadata.perfwatchTruncated).toBe(true);
    expect(parsed.traceEvents.length).toBe(parsed.metadata.perfwatchEvents);
    expect(parsed.traceEvents[0]).toEqual(trace(1).traceEvents[0]);
  });

  it("past its bound leaves the rest of a page's trace unread: events past the cut are never stringified", async () => {
    let stringified = 0;
    const events = trace(100_000).traceEvents.map((event) => ({
      ...event,
      toJSON: () => (stringified++, event),
    }));
    const captured = (await captureTrace({ traceEvents: events }, 48 * 1024))!;
    expect(captured.truncated).toBe(true);
    // What was kept, and at most a batch's worth more (256 KiB of text), never all 100,000.
    expect(stringified).toBeLessThan(captured.pieces + 2_000);
  });

  it('is none when Lighthouse gave no trace', async () => {
    expect(await captureTrace(undefined)).toBeNull();
  });
});

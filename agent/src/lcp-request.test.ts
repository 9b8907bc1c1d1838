import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { captureRunArtifacts } from './artifact-capture.ts';
import { lcpImageUrl } from './lcp-request.ts';

type TraceEvent = { name: string; ts: number; args: { frame?: string; data: Record<string, unknown> } };

/**
 * Real Chromium traces of the fixture site's index.html (Lighthouse 13), trimmed to their paint
 * candidates: on mobile the hero image is the LCP; on desktop a paragraph is, while a small image
 * is still reported as the largest image.
 */
const trace = (name: 'lcp-image' | 'lcp-text') =>
  JSON.parse(readFileSync(new URL(`../../test/fixtures/traces/${name}.json`, import.meta.url), 'utf8')) as {
    traceEvents: TraceEvent[];
  };

const requestLines = (gzip: Uint8Array) =>
  gunzipSync(gzip)
    .toString('utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as { url?: string; lcp?: boolean });

describe("the LCP element's request", () => {
  it('is the image of the last main-frame LCP candidate', () => {
    expect(lcpImageUrl(trace('lcp-image'))).toBe('http://fixture.test/assets/hero.svg');
  });

  it('is none when the LCP is text, though the trace names a largest image', () => {
    const events = trace('lcp-text');
    expect(events.traceEvents.some((e) => e.name === 'LargestImagePaint::Candidate')).toBe(true);
    expect(lcpImageUrl(events)).toBeNull();
  });

  it('follows a later candidate and ignores candidates of an embedded frame', () => {
    const events = trace('lcp-image');
    const lcp = events.traceEvents.find((e) => e.name === 'largestContentfulPaint::Candidate')!;
    const image = events.traceEvents.find((e) => e.name === 'LargestImagePaint::Candidate')!;
    const frame = (id: string, data: Record<string, unknown>, ts: number) => [
      { ...lcp, ts, args: { frame: id, data: { ...lcp.args.data, ...data } } },
      {
        ...image,
        ts,
        args: { frame: id, data: { ...image.args.data, DOMNodeId: data['nodeId'], imageUrl: data['url'] } },
      },
    ];
    events.traceEvents.push(
      ...frame(
        lcp.args.frame!,
        { nodeId: 40, candidateIndex: 2, url: 'http://fixture.test/assets/banner.png' },
        lcp.ts + 10,
      ),
      ...frame(
        'IFRAME',
        {
          nodeId: 3,
          candidateIndex: 1,
          url: 'http://ads.test/big.png',
          isMainFrame: false,
          isOutermostMainFrame: false,
        },
        lcp.ts + 20,
      ),
    );
    expect(lcpImageUrl(events)).toBe('http://fixture.test/assets/banner.png');
  });

  it('is none for what is not a trace', () => {
    for (const value of [
      null,
      undefined,
      'trace',
      { traceEvents: 'x' },
      { traceEvents: [null, 1, { name: 'largestContentfulPaint::Candidate' }] },
    ])
      expect(lcpImageUrl(value)).toBeNull();
  });

  it("marks that one request in a real run's requests artifact, and none for a text LCP", async () => {
    const image = await captureRunArtifacts(loadLhr('mobile', 1), trace('lcp-image'));
    const marked = requestLines(image.requests!.gzip).filter((line) => line.lcp);
    expect(marked).toEqual([expect.objectContaining({ url: 'http://fixture.test/assets/hero.svg', lcp: true })]);
    const text = await captureRunArtifacts(loadLhr('desktop', 1), trace('lcp-text'));
    expect(requestLines(text.requests!.gzip).filter((line) => line.lcp)).toEqual([]);
  });
});

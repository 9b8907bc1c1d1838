import { gzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { artifactRequestLineSchema } from '@perfwatch/common';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { requestKey } from './request-key.ts';
import { readRequestLines, type RequestSide } from './request-lines.ts';
import { diffRequests, thirdPartyChanges, MAX_REQUEST_CHANGES } from './requests-diff.ts';
import { thirdPartiesOf } from './third-parties.ts';

type Item = Record<string, unknown>;
const itemsOf = (lhr: ReturnType<typeof loadLhr>) =>
  (lhr.audits['network-requests']!.details as { items: Item[] }).items;

/** A real run's requests artifact as the agent writes it (one line a request, then the end line), its requests changed by `edit`. */
async function sideOf(edit: (items: Item[]) => Item[] = (items) => items): Promise<RequestSide> {
  const items = edit(itemsOf(loadLhr('mobile', 1)));
  const lines = items.map((item) => JSON.stringify(artifactRequestLineSchema.parse(item)));
  lines.push(JSON.stringify({ end: true, requests: items.length, written: items.length, truncated: false }));
  const gzip = gzipSync(`${lines.join('\n')}\n`);
  return readRequestLines({ body: Readable.from([gzip]), contentEncoding: 'gzip' });
}

const script = {
  url: 'https://cdn.widgets.example/widget.js',
  transferSize: 48_000,
  resourceType: 'Script',
  entity: 'widgets.example',
  networkRequestTime: 120,
  networkEndTime: 340,
};

describe('the requests of two snapshots', () => {
  it('reads a real requests artifact back whole, each request with its size and duration', async () => {
    const side = await sideOf();
    expect(side.truncated).toBe(false);
    expect(side.requests).toHaveLength(itemsOf(loadLhr('mobile', 1)).length);
    expect(side.requests[0]).toMatchObject({
      url: 'http://fixture.test/index.html',
      resourceType: 'Document',
      entity: '127.0.0.1',
    });
    expect(side.requests[0]!.duration).toBeGreaterThan(0);
  });

  it('finds a script added with its size, and nothing else changed between two runs of a page', async () => {
    const diff = diffRequests(await sideOf(), await sideOf((items) => [...items, script]));
    expect(diff).toEqual({
      added: [
        {
          url: script.url,
          entity: 'widgets.example',
          resourceType: 'Script',
          to: { transferSize: 48_000, duration: 220 },
        },
      ],
      removed: [],
      grown: [],
    });
    expect(diffRequests(await sideOf((items) => [...items, script]), await sideOf()).removed.map((r) => r.url)).toEqual(
      [script.url],
    );
  });

  it('matches a request whose cache buster or file hash changed, and lists it grown by 10 KiB and 20% (48,000 → 58,240 bytes; not → 57,000)', async () => {
    const from = await sideOf((items) => [
      ...items,
      { ...script, url: 'https://cdn.widgets.example/widget.1a2b3c4d.js?v=1' },
    ]);
    const small = await sideOf((items) => [
      ...items,
      { ...script, url: 'https://cdn.widgets.example/widget.9f8e7d6c.js?v=2', transferSize: 57_000 },
    ]);
    const big = await sideOf((items) => [
      ...items,
      { ...script, url: 'https://cdn.widgets.example/widget.9f8e7d6c.js?v=2', transferSize: 58_240 },
    ]);
    expect(diffRequests(from, small)).toEqual({ added: [], removed: [], grown: [] });
    expect(diffRequests(from, big).grown).toEqual([
      expect.objectContaining({
        url: 'https://cdn.widgets.example/widget.9f8e7d6c.js?v=2',
        from: { transferSize: 48_000, duration: 220 },
        to: { transferSize: 58_240, duration: 220 },
      }),
    ]);
  });

  it('lists a request grown slower by 100 ms and 20%, not one a few ms slower', async () => {
    const slower = (by: number) => sideOf((items) => [...items, { ...script, networkEndTime: 340 + by }]);
    const base = await slower(0);
    expect(diffRequests(base, await slower(90)).grown).toEqual([]);
    expect(diffRequests(base, await slower(100)).grown).toHaveLength(1);
  });

  it('keeps the largest 50 of each, the largest first, and says when a side was cut', async () => {
    const many = Array.from({ length: 80 }, (_, i) => ({
      ...script,
      url: `https://cdn.widgets.example/p${i}.js`,
      transferSize: 1000 + i,
    }));
    const diff = diffRequests(await sideOf(), await sideOf((items) => [...items, ...many]));
    expect(diff.added).toHaveLength(MAX_REQUEST_CHANGES);
    expect(diff.added[0]!.to!.transferSize).toBe(1079);
    const cut = await readRequestLines(
      {
        body: Readable.from([Buffer.from(gzipSync(many.map((m) => JSON.stringify(m)).join('\n')))]),
        contentEncoding: 'gzip',
      },
      { maxLines: 10, maxLineBytes: 16 * 1024, maxInflatedBytes: 1 << 20 },
    );
    expect(cut.requests).toHaveLength(10);
    expect(diffRequests(await sideOf(), cut).truncated).toBe(true);
  });

  it('reads past a line too long and lines that are no request, and stops at its inflated bound', async () => {
    const lines = [
      JSON.stringify(script),
      `{"url":"${'x'.repeat(40_000)}"}`,
      'not json',
      '[1,2]',
      JSON.stringify({ ...script, url: 'https://b.test/' }),
    ];
    const side = await readRequestLines({ body: Readable.from([Buffer.from(lines.join('\n'))]) });
    expect(side.requests.map((r) => r.url)).toEqual([script.url, 'https://b.test/']);
    // 64 MiB of zeros is 64 kB of gzip: the read stops at its bound, having kept nothing of it.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const bounded = await readRequestLines({ body: Readable.from([bomb]), contentEncoding: 'gzip' });
    expect(bounded).toEqual({ requests: [], truncated: true });
  });
});

describe('the request key', () => {
  it('drops cache busters, the fragment and file hashes, and sorts the rest', () => {
    expect(requestKey('https://a.test/app.3f9a12c4.js?v=3')).toBe('https://a.test/app.#.js');
    expect(requestKey('https://a.test/x.js?b=2&a=1&_=1712345678901#top')).toBe('https://a.test/x.js?a=1&b=2');
    expect(requestKey('https://a.test/api?session=abcdef0123456789&page=2')).toBe('https://a.test/api?page=2');
    expect(requestKey('https://a.test/jquery-3.7.1.min.js?id=42')).toBe('https://a.test/jquery-3.7.1.min.js?id=42');
  });
});

describe('third parties of two snapshots', () => {
  const summaries = (cost: { bytes: number; ms: number } | null) => {
    const rows = thirdPartiesOf(loadLhr('mobile', 2));
    return cost
      ? [
          ...rows,
          {
            entity: 'widgets.example',
            firstParty: false,
            transferSize: cost.bytes,
            mainThreadTime: cost.ms,
            blockingTime: 0,
            requests: 1,
          },
        ]
      : rows;
  };

  it('names a third party that came or went with its cost, never the first party', () => {
    const added = thirdPartyChanges(summaries(null), summaries({ bytes: 48_000, ms: 180 }));
    expect(added).toEqual([
      {
        entity: 'widgets.example',
        from: null,
        to: { transferSize: 48_000, mainThreadTime: 180, blockingTime: 0, requests: 1 },
      },
    ]);
    expect(thirdPartyChanges(summaries({ bytes: 48_000, ms: 180 }), summaries(null))[0]).toMatchObject({
      entity: 'widgets.example',
      to: null,
    });
  });

  it('names one whose cost moved past the rules, not one within them', () => {
    expect(thirdPartyChanges(summaries({ bytes: 48_000, ms: 180 }), summaries({ bytes: 52_000, ms: 200 }))).toEqual([]);
    expect(
      thirdPartyChanges(summaries({ bytes: 48_000, ms: 180 }), summaries({ bytes: 48_000, ms: 400 })),
    ).toHaveLength(1);
    expect(
      thirdPartyChanges(summaries({ bytes: 48_000, ms: 180 }), summaries({ bytes: 20_000, ms: 180 })),
    ).toHaveLength(1);
  });
});

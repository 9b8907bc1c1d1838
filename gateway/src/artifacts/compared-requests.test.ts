import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { ARTIFACT_MAX_BYTES, type CellArtifacts } from '@perfwatch/common';
import { compareRequests, type RequestsSide } from './compared-requests.ts';
import { createFsArtifactStore } from './store/fs-artifact-store.ts';

const dir = await mkdtemp(join(tmpdir(), 'perfwatch-compared-requests-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
const store = createFsArtifactStore({ dir });
const taken = new Date('2026-11-20T10:00:00Z');
const clock = { retentionDays: 30, now: () => new Date('2026-11-26T10:00:00Z') };
const line = (url: string, transferSize: number) =>
  JSON.stringify({ url, transferSize, networkRequestTime: 10, networkEndTime: 60, resourceType: 'Script' });

/** A side whose requests artifact holds `urls` (stored in the fs store), or whose cell says `artifacts`. */
async function side(updateId: string, urls: string[] | null, artifacts?: CellArtifacts): Promise<RequestsSide> {
  const cell = { device: 'mobile' as const, location: 'london' as const };
  if (urls) {
    const text = `${[...urls.map((u) => line(u, 20_000)), JSON.stringify({ end: true, requests: urls.length, written: urls.length, truncated: false })].join('\n')}\n`;
    const gzip = gzipSync(text);
    await store.put(
      { orgId: 'org', projectId: 'p', snapshotId: updateId, ...cell, kind: 'requests' },
      Readable.from([gzip]),
      {
        maxBytes: ARTIFACT_MAX_BYTES.requests,
        contentType: 'application/x-ndjson',
        contentEncoding: 'gzip',
      },
    );
  }
  return {
    project: { id: 'p', userId: 'org' },
    snapshot: { updateId, date: taken },
    cell: { ...cell, artifacts: artifacts ?? { requests: { state: 'stored', bytes: 1 } } },
  };
}

describe('comparing two cells’ stored requests', () => {
  it('reads both sides from the store and lists what was added and removed', async () => {
    const compared = await compareRequests(
      { store, clock },
      await side('u1', ['https://a.test/app.js', 'https://a.test/old.js']),
      await side('u2', ['https://a.test/app.js', 'https://ads.test/tag.js']),
    );
    expect(compared).toMatchObject({
      state: 'compared',
      added: [{ url: 'https://ads.test/tag.js', to: { transferSize: 20_000, duration: 50 } }],
      removed: [{ url: 'https://a.test/old.js' }],
      grown: [],
    });
  });

  it('says which side could not be read and why', async () => {
    const stored = await side('u3', ['https://a.test/app.js']);
    const cases: Array<[RequestsSide, RequestsSide, RegExp, typeof store?]> = [
      [await side('x', null, {}), stored, /^from: its requests were never kept/],
      [
        stored,
        await side('x', null, { requests: { state: 'missing', reason: 'the artifact store was down' } }),
        /^to: its requests were not kept: the artifact store was down$/,
      ],
      [stored, await side('gone', null), /^to: its requests were stored, and are no longer in the artifact store$/],
    ];
    for (const [from, to, reason] of cases)
      expect(await compareRequests({ store, clock }, from, to)).toEqual({
        state: 'unavailable',
        reason: expect.stringMatching(reason),
      });
    const later = { retentionDays: 3, now: clock.now };
    expect(await compareRequests({ store, clock: later }, stored, stored)).toEqual({
      state: 'unavailable',
      reason: 'from: its requests expired on 2026-11-23T10:00:00 (kept 3 days: ARTIFACT_RETENTION_DAYS)',
    });
    const down = { get: () => Promise.reject(new Error('connect ECONNREFUSED')) };
    expect(await compareRequests({ store: down, clock }, stored, stored)).toEqual({
      state: 'unavailable',
      reason: 'from: the artifact store is not answering',
    });
  });
});

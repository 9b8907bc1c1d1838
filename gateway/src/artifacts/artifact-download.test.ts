import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, truncate } from 'node:fs/promises';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendArtifact } from './artifact-download.ts';
import { artifactSegments, type ArtifactKey } from './store/artifact-store.ts';
import { createFsArtifactStore } from './store/fs-artifact-store.ts';

// sendArtifact over a real socket, from a real fs artifact store: what a client gets when the
// stored bytes turn out bad only once the answer has begun.

const KEY: ArtifactKey = {
  orgId: 'org1',
  projectId: 'p1',
  snapshotId: 'u1',
  device: 'mobile',
  location: 'london',
  kind: 'requests',
};
/** Lines that do not compress away: inflating them takes many chunks. */
const NDJSON = Array.from(
  { length: 4_000 },
  () => `{"url":"https://shop.example/${randomBytes(24).toString('hex')}"}\n`,
).join('');
const clock = { retentionDays: 30, now: () => new Date() };

let dir: string;
let url: string;
let close: () => void;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-download-'));
  const store = createFsArtifactStore({ dir });
  const gzip = gzipSync(NDJSON);
  await store.put(KEY, Readable.from([gzip]), {
    maxBytes: 10_000_000,
    contentType: 'application/x-ndjson',
    contentEncoding: 'gzip',
  });
  // The stored file cut short behind the store's back (a disk that lost its end).
  await truncate(join(dir, ...artifactSegments(KEY)), Math.floor(gzip.byteLength / 2));
  const app = express();
  const deps = { store, clock, logger: pino({ level: 'silent' }) };
  const artifacts = { requests: { state: 'stored' as const, bytes: gzip.byteLength } };
  app.get('/', (req, res, next) => {
    sendArtifact(req, res, deps, { key: KEY, artifacts, snapshotDate: new Date() }).catch(next);
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  close = () => server.close();
});

afterAll(async () => {
  close?.();
  await rm(dir, { recursive: true, force: true });
});

/** A GET with these headers; how its body ended: whole, or cut. */
function get(
  headers: Record<string, string>,
): Promise<{ status: number; bytes: number; ended: 'whole' | 'cut'; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.byteLength));
      const answer = { status: res.statusCode!, headers: res.headers };
      res.on('end', () => resolve({ ...answer, bytes, ended: res.complete ? 'whole' : 'cut' }));
      res.on('error', () => resolve({ ...answer, bytes, ended: 'cut' }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('sendArtifact', () => {
  it('cuts the connection when the stored gzip fails to inflate mid-way: the short body never looks whole', async () => {
    const got = await get({});
    expect(got.status).toBe(200);
    expect(got.bytes).toBeLessThan(NDJSON.length);
    expect(got.ended).toBe('cut');
  });

  it("serves the page's own text (its URLs) as data a browser never sniffs into a page or runs", async () => {
    const { headers } = await get({ 'Accept-Encoding': 'gzip' });
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['content-security-policy']).toBe("default-src 'none'; sandbox");
  });
});

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ArtifactTooLarge,
  type ArtifactKey,
  type ArtifactStore,
} from '../../gateway/src/artifacts/store/artifact-store.ts';
import { createFsArtifactStore } from '../../gateway/src/artifacts/store/fs-artifact-store.ts';
import { artifactStoreFromSettings } from '../../gateway/src/artifacts/store/artifact-store-from-settings.ts';
import { startSeaweedFs, type SeaweedFs } from '../support/seaweedfs.ts';

// The artifact store's contract, on disk and on a real S3 server (SeaweedFS built by
// scripts/setup.sh). Each case has a store of its own: a fresh directory, or a fresh bucket.

interface Opened {
  store: ArtifactStore;
  /** Whatever the backend holds, written or half-written (files, objects, multipart uploads). */
  leftovers(): Promise<string[]>;
  /** Puts what is not an artifact at `path` behind the store's back (a file; an object and an upload begun): its leftovers. */
  plant(path: string): Promise<string[]>;
}

const MiB = 1024 * 1024;
const key: ArtifactKey = {
  orgId: 'org1',
  projectId: '65f0a1b2c3d4e5f6a7b8c9d0',
  snapshotId: '65f0a1b2c3d4e5f6a7b8c9d1',
  device: 'mobile',
  location: 'london',
  kind: 'trace',
};
const gzip = { maxBytes: 20 * MiB, contentType: 'application/json', contentEncoding: 'gzip' } as const;

/** `total` bytes in chunks of 64 KiB, made as they are read (never whole in memory), and their SHA-256. */
function streamedBody(total: number, seed = randomBytes(16)) {
  const hash = createHash('sha256');
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for (let sent = 0; sent < total;) {
      const size = Math.min(64 * 1024, total - sent);
      const chunk = createHash('sha512').update(seed).update(String(sent)).digest();
      const block = Buffer.alloc(size, chunk);
      hash.update(block);
      sent += size;
      yield block;
    }
  }
  return { body: chunks(), digest: () => hash.digest('hex') };
}

async function read(store: ArtifactStore, at: ArtifactKey) {
  const found = await store.get(at);
  if (!found) return null;
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of found.body as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.byteLength;
  }
  const { contentType, contentEncoding } = found;
  return { bytes, said: found.bytes, digest: hash.digest('hex'), contentType, contentEncoding };
}

async function text(store: ArtifactStore, at: ArtifactKey): Promise<string | null> {
  const found = await store.get(at);
  if (!found) return null;
  const parts: Buffer[] = [];
  for await (const chunk of found.body as AsyncIterable<Buffer>) parts.push(chunk);
  return Buffer.concat(parts).toString();
}

async function* once(value: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(value);
}

const plain = { maxBytes: MiB, contentType: 'application/x-ndjson' };

function contract(name: string, open: () => Promise<Opened>) {
  describe(`artifact store: ${name}`, () => {
    it('gives back a multi-megabyte body streamed in, byte for byte, with its type and encoding', async () => {
      const { store } = await open();
      const big = streamedBody(12 * MiB + 12_345);
      expect(await store.put(key, big.body, gzip)).toEqual({ bytes: 12 * MiB + 12_345 });
      expect(await read(store, key)).toEqual({
        bytes: 12 * MiB + 12_345,
        said: 12 * MiB + 12_345,
        digest: big.digest(),
        contentType: 'application/json',
        contentEncoding: 'gzip',
      });

      const requests = { ...key, kind: 'requests' } as const;
      await store.put(requests, once('{"url":"https://a.example/"}\n'), plain);
      const small = await store.get(requests);
      expect([small?.bytes, small?.contentType, small?.contentEncoding]).toEqual([
        29,
        'application/x-ndjson',
        undefined,
      ]);
      // Its body not read here: destroyed, so its file is closed now, not by the collector.
      (small?.body as Readable | undefined)?.destroy();
      expect(await text(store, requests)).toBe('{"url":"https://a.example/"}\n');
    });

    it('refuses a body past its bound and keeps nothing of it, nor loses what was there', async () => {
      const { store, leftovers } = await open();
      // Past the bound in the first part, and past it several parts in (a multipart upload begun).
      await expect(store.put(key, streamedBody(4096).body, { ...gzip, maxBytes: 1024 })).rejects.toBeInstanceOf(
        ArtifactTooLarge,
      );
      await expect(store.put(key, streamedBody(13 * MiB).body, { ...gzip, maxBytes: 11 * MiB })).rejects.toThrow(
        ArtifactTooLarge,
      );
      expect(await store.get(key)).toBeNull();
      expect(await leftovers()).toEqual([]);

      await store.put(key, once('kept'), plain);
      await expect(store.put(key, streamedBody(2 * MiB).body, plain)).rejects.toBeInstanceOf(ArtifactTooLarge);
      expect(await text(store, key)).toBe('kept');
    });

    it('answers null for what was never written', async () => {
      const { store } = await open();
      await store.put(key, once('trace'), plain);
      expect(await store.get({ ...key, kind: 'requests' })).toBeNull();
      expect(await store.get({ ...key, device: 'desktop' })).toBeNull();
      expect(await store.get({ ...key, snapshotId: 'another' })).toBeNull();
    });

    it('removes a snapshot whole (every cell and kind) and nothing of another', async () => {
      const { store } = await open();
      const cells = [key, { ...key, kind: 'requests' }, { ...key, device: 'desktop', location: 'tokyo' }] as const;
      for (const cell of cells) await store.put(cell, once(`${cell.device}-${cell.kind}`), plain);
      const other = { ...key, snapshotId: 'later' };
      await store.put(other, once('later'), plain);

      await store.removeSnapshot(key.orgId, key.projectId, key.snapshotId);
      for (const cell of cells) expect(await store.get(cell)).toBeNull();
      expect(await text(store, other)).toBe('later');
      await store.removeSnapshot(key.orgId, key.projectId, 'never-written');
    });

    it('removes what was written before the cutoff, and says how many', async () => {
      const { store } = await open();
      const early = [key, { ...key, kind: 'requests' }] as const;
      for (const cell of early) await store.put(cell, once('early'), plain);
      // S3 keeps an object's time to the second: the cutoff stands a second clear of both writes.
      await sleep(1_100);
      const cutoff = new Date();
      await sleep(1_100);
      const late = { ...key, snapshotId: 'later' };
      await store.put(late, once('late'), plain);

      expect(await store.removeOlderThan(cutoff)).toBe(2);
      for (const cell of early) expect(await store.get(cell)).toBeNull();
      expect(await text(store, late)).toBe('late');
      expect(await store.removeOlderThan(cutoff)).toBe(0);
    });

    it('removes by age only its own artifacts, never what else the directory or bucket holds', async () => {
      const { store, leftovers, plant } = await open();
      const others = ['backups/2026/nov/db.dump', `${key.orgId}/${key.projectId}/${key.snapshotId}/notes.txt`];
      const planted: string[] = [];
      for (const path of others) planted.push(...(await plant(path)));
      await store.put(key, once('old'), plain);
      await sleep(1_100);
      const cutoff = new Date();

      expect(await store.removeOlderThan(cutoff)).toBe(1);
      expect(await store.get(key)).toBeNull();
      expect((await leftovers()).sort()).toEqual(planted.sort());
    });

    it("keeps two organisations' artifacts apart, whatever ids they share", async () => {
      const { store } = await open();
      const theirs = { ...key, orgId: 'org2' };
      await store.put(key, once('ours'), plain);
      await store.put(theirs, once('theirs'), plain);
      expect([await text(store, key), await text(store, theirs)]).toEqual(['ours', 'theirs']);
      await store.removeSnapshot(key.orgId, key.projectId, key.snapshotId);
      expect([await text(store, key), await text(store, theirs)]).toEqual([null, 'theirs']);
    });

    it('refuses an id that is not a plain name, writing nothing', async () => {
      const { store, leftovers } = await open();
      for (const orgId of ['../escape', 'a/b', '', '.'])
        await expect(store.put({ ...key, orgId }, once('x'), plain)).rejects.toThrow(/id/);
      await expect(store.removeSnapshot('..', key.projectId, key.snapshotId)).rejects.toThrow(/id/);
      expect(await leftovers()).toEqual([]);
    });
  });
}

contract('fs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifacts-'));
  dirs.push(dir);
  return {
    store: createFsArtifactStore({ dir }),
    leftovers: async () =>
      (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name),
    plant: async (path) => {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), 'not an artifact');
      return [basename(path)];
    },
  };
});

describe('fs artifact store: what a crashed write left', () => {
  it('a directory in .incoming is removed past the cutoff, not a failure of every retention pass', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifacts-'));
    dirs.push(dir);
    const store = createFsArtifactStore({ dir });
    await store.put(key, once('old'), plain);
    const stray = join(dir, '.incoming', 'stray');
    await mkdir(stray, { recursive: true });
    await writeFile(join(stray, 'part'), 'left behind');
    await sleep(1_100);
    expect(await store.removeOlderThan(new Date())).toBe(1);
    expect(await readdir(join(dir, '.incoming'))).toEqual([]);
  });
});
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('on SeaweedFS', () => {
  let server: SeaweedFs;
  let cases = 0;
  beforeAll(async () => {
    server = await startSeaweedFs();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });
  // A bucket per case, and the store made from the settings a cluster would give.
  contract('S3', async () => {
    const bucket = `case-${++cases}`;
    const { client } = server;
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    const { store } = artifactStoreFromSettings({
      ARTIFACT_STORE: 's3',
      ARTIFACT_S3_ENDPOINT: server.endpoint,
      ARTIFACT_S3_BUCKET: bucket,
      ARTIFACT_S3_REGION: server.region,
      ARTIFACT_S3_ACCESS_KEY_ID: server.accessKeyId,
      ARTIFACT_S3_SECRET_ACCESS_KEY: server.secretAccessKey,
      ARTIFACT_S3_FORCE_PATH_STYLE: true,
    });
    return {
      store,
      leftovers: async () => {
        const objects = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
        const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
        return [
          ...(objects.Contents ?? []).map((o) => `object ${o.Key}`),
          ...(uploads.Uploads ?? []).map((u) => `upload ${u.Key}`),
        ];
      },
      plant: async (path) => {
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: path, Body: 'not an artifact' }));
        await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: path }));
        return [`object ${path}`, `upload ${path}`];
      },
    };
  });
});

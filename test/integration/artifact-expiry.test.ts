import { readdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseApiDateTime } from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import type { GatewayConfig, ProjectRecord } from '@perfwatch/gateway';
import { bulkyTrace, keepingArtifacts } from '../support/artifact-runner.ts';
import { REMOVAL_GRACE_MS } from '../../gateway/src/artifacts/store/artifact-retention.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { measuredWait } from '../support/measured-wait.ts';
import { startSeaweedFs } from '../support/seaweedfs.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// ARTIFACT_RETENTION_DAYS on a running gateway, through its scheduler's retention pass and its
// /v1/audit, on both artifact stores: an older snapshot's artifacts reported "expired", then
// removed a day later, a newer one's kept and reported "stored". The gateway is given its clock (`now`): the
// pass is run days ahead instead of days later. The agent is the shipped one in this process; only
// its runner is a double (captured Lighthouse results): measuring is not what is under test.

const RETENTION_DAYS = 2;
const DAY_MS = 86_400_000;

interface Listing {
  /** The artifacts of one snapshot the store holds, as the store's own medium lists them. */
  artifactsOf(p: ProjectRecord, snapshotId: string): Promise<string[]>;
  /**
   * S3: a multipart upload begun under the snapshot and never finished (what a server that died
   * mid-write keeps: artifacts-s3-down.test.ts), and the uploads left unfinished under the project.
   */
  abandonedUpload?: {
    begin(p: ProjectRecord, snapshotId: string): Promise<void>;
    left(p: ProjectRecord): Promise<string[]>;
  };
}

interface Stack {
  gateway: TestGateway;
  token: string;
  /** From now on the gateway's clock reads `at` (the scheduler's passes and /v1/audit's states). */
  setClock(at: Date): void;
  dispose(): Promise<void>;
}

async function startStack(config: Partial<GatewayConfig>): Promise<Stack> {
  let frozen: Date | null = null;
  const nats = await isolatedNats();
  const gateway = await startTestGateway({
    natsUrl: nats.url,
    now: () => frozen ?? new Date(),
    config: { ...config, ARTIFACT_RETENTION_DAYS: RETENTION_DAYS, SCHEDULER_INTERVAL_MS: 200 },
  });
  const agentNc: NatsConnection = await connect({ servers: nats.url });
  const runner = keepingArtifacts(fixtureRunner({ delayMs: 20 }), await bulkyTrace(600_000));
  const agent: Agent = startAgent({ nc: agentNc, location: 'london', runner, logger: silentLogger, agentId: 'ldn-1' });
  const { token } = await gateway.admin.createUser('alice');
  return {
    gateway,
    token,
    setClock: (at) => void (frozen = at),
    async dispose() {
      await agent.stop();
      await agentNc.drain();
      await gateway.stop();
      await nats.dispose();
    },
  };
}

/** A sync update, timed; its snapshot as stored. */
async function update({ gateway, token }: Stack, p: ProjectRecord) {
  const started = performance.now();
  const res = await fetch(new URL(`/v1/update?url=${encodeURIComponent(p.url)}`, gateway.url), {
    headers: { Authorization: token },
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { mobile: { london: { lighthouse: { date: string } } } };
  const ms = performance.now() - started;
  const snapshot = await gateway.store.findSnapshot(p.id, parseApiDateTime(body.mobile.london.lighthouse.date)!);
  return { ms, snapshot: snapshot! };
}

/** The cell's artifacts as /v1/audit reports them now (by the gateway's clock). */
async function reported({ gateway, token }: Stack, p: ProjectRecord, date: Date) {
  const url = new URL('/v1/audit', gateway.url);
  url.searchParams.set('url', p.url);
  url.searchParams.set('date', date.toISOString().replace(/\.\d{3}Z$/, 'Z'));
  const res = await fetch(url, { headers: { Authorization: token } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { mobile: { london: { artifacts?: unknown } } };
  return body.mobile.london.artifacts;
}

/** Resolves once the wall clock reads `at` or later (a timer may fire a little early). */
async function until(at: number): Promise<void> {
  while (Date.now() < at) await sleep(at - Date.now());
}

function expiryCases(name: string, start: () => Promise<Stack & Listing>) {
  describe(`artifact expiry (${name})`, () => {
    let stack: Stack & Listing;
    beforeAll(async () => {
      stack = await start();
    }, 180_000);
    afterAll(async () => {
      await stack?.dispose();
    });

    it("the retention pass removes an older snapshot's artifacts, which it reports expired; a newer one keeps them", async () => {
      const p = await stack.gateway.admin.addProject('alice', 'https://shop.example/', {
        locations: ['london'],
        devices: ['mobile'],
        runs: 1,
      });
      const older = await update(stack, p);
      await stack.abandonedUpload?.begin(p, older.snapshot.updateId);
      // Between the two, a cutoff after everything of the older snapshot (its artifacts' writes, its
      // date) and before everything of the newer one: snapshot dates and S3 objects' times are to the
      // second, so it is a whole second, and the newer update starts a second past it.
      const cutoff = new Date(Math.ceil((Date.now() + 1) / 1000) * 1000);
      await until(cutoff.getTime() + 1000);
      const newer = await update(stack, p);
      const kinds = ['mobile-london-requests', 'mobile-london-trace'];
      expect(await stack.artifactsOf(p, older.snapshot.updateId)).toEqual(kinds);
      expect(await stack.artifactsOf(p, newer.snapshot.updateId)).toEqual(kinds);

      // Past ARTIFACT_RETENTION_DAYS from the cutoff: the older snapshot says its artifacts expired,
      // the newer says stored, and nothing is removed yet (the pass waits a day more: REMOVAL_GRACE_MS).
      stack.setClock(new Date(cutoff.getTime() + RETENTION_DAYS * DAY_MS));
      const expired = { state: 'expired', expired: expect.any(String) };
      expect(await reported(stack, p, older.snapshot.date)).toEqual({ requests: expired, trace: expired });
      const stored = { state: 'stored', bytes: expect.any(Number), expires: expect.any(String) };
      expect(await reported(stack, p, newer.snapshot.date)).toEqual({ requests: stored, trace: stored });

      // A day later, the first pass removes the older snapshot's artifacts (written before the cutoff),
      // not the newer one's (written after it). The states expire first and removal follows, so a
      // snapshot never says stored of an artifact removed (its artifacts are written before its date).
      stack.setClock(new Date(cutoff.getTime() + RETENTION_DAYS * DAY_MS + REMOVAL_GRACE_MS));
      // A pass is a few of the store's calls, fewer than an update makes: an update's time is room enough.
      await vi.waitFor(
        async () => {
          expect(await stack.artifactsOf(p, older.snapshot.updateId)).toEqual([]);
          expect((await stack.abandonedUpload?.left(p)) ?? []).toEqual([]);
        },
        { timeout: measuredWait(older.ms, 1), interval: 100 },
      );
      expect(await stack.artifactsOf(p, newer.snapshot.updateId)).toEqual(kinds);
      expect(await reported(stack, p, older.snapshot.date)).toEqual({ requests: expired, trace: expired });
    }, 180_000);
  });
}

/** The artifacts under the snapshot's directory, as the fs store leaves them on disk (each with its .meta.json). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const names = entries.filter((e) => e.isFile()).map((e) => e.name.replace(/\.meta\.json$/, ''));
  return [...new Set(names)].sort();
}

expiryCases('fs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifact-expiry-'));
  const stack = await startStack({ ARTIFACT_STORE: 'fs', ARTIFACT_DIR: dir });
  return {
    ...stack,
    artifactsOf: (p, snapshotId) => filesUnder(join(dir, p.userId, p.id, snapshotId)),
    async dispose() {
      await stack.dispose();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

expiryCases('s3', async () => {
  const seaweed = await startSeaweedFs();
  const { client, bucket } = seaweed;
  const stack = await startStack({
    ARTIFACT_STORE: 's3',
    ARTIFACT_S3_ENDPOINT: seaweed.endpoint,
    ARTIFACT_S3_BUCKET: bucket,
    ARTIFACT_S3_REGION: seaweed.region,
    ARTIFACT_S3_ACCESS_KEY_ID: seaweed.accessKeyId,
    ARTIFACT_S3_SECRET_ACCESS_KEY: seaweed.secretAccessKey,
    ARTIFACT_S3_FORCE_PATH_STYLE: true,
  });
  return {
    ...stack,
    async artifactsOf(p, snapshotId) {
      const prefix = `${p.userId}/${p.id}/${snapshotId}/`;
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
      return (page.Contents ?? []).map((o) => o.Key!.slice(prefix.length)).sort();
    },
    abandonedUpload: {
      async begin(p, snapshotId) {
        const Key = `${p.userId}/${p.id}/${snapshotId}/mobile-london-trace`;
        const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key }));
        await client.send(
          new UploadPartCommand({ Bucket: bucket, Key, UploadId, PartNumber: 1, Body: Buffer.alloc(5 * 1024 * 1024) }),
        );
      },
      async left(p) {
        const page = await client.send(
          new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: `${p.userId}/${p.id}/` }),
        );
        return (page.Uploads ?? []).map((u) => u.Key!);
      },
    },
    async dispose() {
      await stack.dispose();
      await seaweed.stop();
    },
  };
});

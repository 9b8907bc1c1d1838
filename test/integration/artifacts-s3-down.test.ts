import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACT_CHUNK_BYTES, ARTIFACT_HEADERS, artifactPushSubject, type ArtifactKind } from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import type { ProjectRecord } from '@perfwatch/gateway';
import { S3_CLIENT_LIMITS } from '../../gateway/src/artifacts/store/s3-artifact-store.ts';
import { bulkyTrace, keepingArtifacts } from '../support/artifact-runner.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { startSeaweedFs, type SeaweedFs } from '../support/seaweedfs.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// What this file claims: the gateway, the artifact transfer and the S3 artifact store on a real
// S3 server (SeaweedFS) under its faults. The agent is the shipped one (its artifact cache and
// sender) run in this process over a real nats-server; only its runner is a double (captured
// Lighthouse results, and a bulky trace), since measuring is not what is under test here.

/** 12 MB gzipped: 48 chunks of the transfer, a multipart upload of three parts. */
const TRACE_BYTES = 12 * 1024 * 1024;
/**
 * The chunk at which the server is killed: past the upload's first part (5 MB, 20 chunks) and
 * what the store's stream reads ahead of it (16 chunks), so a part is on the server by then.
 */
const CRASH_AT_CHUNK = 40;

let seaweed: SeaweedFs;
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentNc: NatsConnection;
let watchNc: NatsConnection;
let agent: Agent;
let token: string;
let traceBytes: number;

beforeAll(async () => {
  seaweed = await startSeaweedFs();
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    // The update's own bound stays far off: what a down S3 server costs is measured, not cut short.
    replyTimeoutMs: 600_000,
    config: {
      ARTIFACT_STORE: 's3',
      ARTIFACT_S3_ENDPOINT: seaweed.endpoint,
      ARTIFACT_S3_BUCKET: seaweed.bucket,
      ARTIFACT_S3_REGION: seaweed.region,
      ARTIFACT_S3_ACCESS_KEY_ID: seaweed.accessKeyId,
      ARTIFACT_S3_SECRET_ACCESS_KEY: seaweed.secretAccessKey,
      ARTIFACT_S3_FORCE_PATH_STYLE: true,
    },
  });
  const trace = await bulkyTrace(TRACE_BYTES);
  traceBytes = trace.gzip.byteLength;
  agentNc = await connect({ servers: nats.url });
  watchNc = await connect({ servers: nats.url });
  const runner = keepingArtifacts(fixtureRunner({ delayMs: 20 }), trace);
  agent = startAgent({ nc: agentNc, location: 'london', runner, logger: silentLogger, agentId: 'london-s3' });
  ({ token } = await gateway.admin.createUser('alice'));
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  await agentNc?.drain();
  await watchNc?.drain();
  await gateway?.stop();
  await nats?.dispose();
  await seaweed?.stop();
});

let projects = 0;
/** A project of its own per case, so the bucket's listing under its prefix is that case's alone. */
async function project(): Promise<ProjectRecord> {
  return gateway.admin.addProject('alice', `https://shop.example/case-${++projects}`, {
    locations: ['london'],
    devices: ['mobile'],
    runs: 1,
  });
}

/** A sync update of the project, timed; its one cell's snapshot date. */
async function update(p: ProjectRecord) {
  const started = performance.now();
  const res = await fetch(new URL(`/v1/update?url=${encodeURIComponent(p.url)}`, gateway.url), {
    headers: { Authorization: token },
  });
  const ms = performance.now() - started;
  const body = (await res.json()) as { mobile?: { london?: { lighthouse: { date: string } } } };
  return { status: res.status, ms, date: body.mobile?.london?.lighthouse.date };
}

/** The cell's artifacts as /v1/audit reports them (ReportedArtifact of gateway/src/artifacts/artifact-states.ts). */
async function reportedArtifacts(p: ProjectRecord, date: string | undefined) {
  const url = new URL('/v1/audit', gateway.url);
  url.searchParams.set('url', p.url);
  url.searchParams.set('date', date ?? '');
  const res = await fetch(url, { headers: { Authorization: token } });
  expect(res.status).toBe(200);
  type Reported = { state: string; bytes?: number; reason?: string };
  const body = (await res.json()) as { mobile: { london: { artifacts?: Partial<Record<ArtifactKind, Reported>> } } };
  return body.mobile.london.artifacts;
}

/** The objects under the project's prefix, as S3's own API lists them. */
async function listed(p: ProjectRecord): Promise<Array<{ key: string; bytes: number }>> {
  const page = await seaweed.client.send(
    new ListObjectsV2Command({ Bucket: seaweed.bucket, Prefix: `${p.userId}/${p.id}/` }),
  );
  return (page.Contents ?? []).map((o) => ({ key: o.Key!.split('/').slice(2).join('/'), bytes: o.Size ?? 0 }));
}

/** Multipart uploads begun under the project's prefix and never completed nor aborted. */
async function unfinishedUploads(p: ProjectRecord): Promise<string[]> {
  const page = await seaweed.client.send(
    new ListMultipartUploadsCommand({ Bucket: seaweed.bucket, Prefix: `${p.userId}/${p.id}/` }),
  );
  return (page.Uploads ?? []).map((u) => u.Key!);
}

/** Calls `then` at the first chunk numbered `seq` of any transfer to london: only the trace has that many. */
function atChunk(seq: number, then: () => void) {
  let done = false;
  const sub = watchNc.subscribe(artifactPushSubject('london', '*'), {
    callback: (_error, msg) => {
      if (done || msg.headers?.get(ARTIFACT_HEADERS.seq) !== String(seq)) return;
      done = true;
      then();
    },
  });
  return { seen: () => done, stop: () => sub.unsubscribe() };
}

/** The S3-up update's time, which the cases with the server down are held to. */
let upMs = 0;

describe('artifacts in S3 through the gateway', () => {
  it('an update keeps both artifacts of its cell as objects under the snapshot', async () => {
    expect(traceBytes).toBeGreaterThan(CRASH_AT_CHUNK * ARTIFACT_CHUNK_BYTES);
    const p = await project();
    const answer = await update(p);
    expect(answer.status).toBe(200);
    upMs = answer.ms;
    const artifacts = await reportedArtifacts(p, answer.date);
    expect(artifacts).toEqual({
      requests: { state: 'stored', bytes: expect.any(Number), expires: expect.any(String) },
      trace: { state: 'stored', bytes: traceBytes, expires: expect.any(String) },
    });
    const objects = await listed(p);
    expect(objects.map((o) => o.key.split('/')[1]).sort()).toEqual(['mobile-london-requests', 'mobile-london-trace']);
    expect(objects.find((o) => o.key.endsWith('trace'))?.bytes).toBe(traceBytes);
    expect(objects.find((o) => o.key.endsWith('requests'))?.bytes).toBe(artifacts?.requests?.bytes);
  }, 180_000);

  it("S3 stopped during the trace's write: the snapshot is stored, the trace missing, nothing of it left", async () => {
    const p = await project();
    const crash = atChunk(CRASH_AT_CHUNK, () => void seaweed.crash());
    await watchNc.flush();
    try {
      const answer = await update(p);
      expect(crash.seen()).toBe(true);
      expect(answer.status).toBe(200);
      const artifacts = await reportedArtifacts(p, answer.date);
      expect(artifacts?.requests).toMatchObject({ state: 'stored' });
      expect(artifacts?.trace).toEqual({ state: 'missing', reason: expect.stringMatching(/\w/) });
    } finally {
      crash.stop();
    }
    await seaweed.restart();
    expect((await listed(p)).map((o) => o.key.split('/')[1])).toEqual(['mobile-london-requests']);
    // The store's abort could not reach a dead server: the trace's parts are kept, never as an object,
    // until the retention pass aborts the upload (artifact-expiry.test.ts).
    expect(await unfinishedUploads(p)).toEqual([expect.stringMatching(/\/mobile-london-trace$/)]);
  }, 300_000);

  it('S3 down before the update: the snapshot is stored with both missing, as soon as with S3 up', async () => {
    const p = await project();
    await seaweed.crash();
    try {
      const answer = await update(p);
      expect(answer.status).toBe(200);
      const artifacts = await reportedArtifacts(p, answer.date);
      expect(artifacts?.requests).toMatchObject({ state: 'missing' });
      expect(artifacts?.trace).toMatchObject({ state: 'missing' });
      // Refused connections are retried once, after a fraction of a second; no part is sent.
      expect(answer.ms).toBeLessThan(2 * upMs + 1_000 * S3_CLIENT_LIMITS.maxAttempts);
    } finally {
      await seaweed.restart();
    }
    expect(await listed(p)).toEqual([]);
  }, 300_000);

  it('S3 frozen before the update (connections taken, never answered): both missing within the client limits', async () => {
    const p = await project();
    seaweed.freeze();
    let answer: Awaited<ReturnType<typeof update>>;
    try {
      answer = await update(p);
    } finally {
      seaweed.thaw();
    }
    expect(answer.status).toBe(200);
    const artifacts = await reportedArtifacts(p, answer.date);
    expect(artifacts?.requests).toMatchObject({ state: 'missing' });
    expect(artifacts?.trace).toMatchObject({ state: 'missing' });
    // Each attempt waits for the socket's silence (the kernel accepts the connection), timed from a
    // few seconds in (the SDK arms long socket timers late): twice the silence per attempt bounds it.
    const { maxAttempts, requestHandler } = S3_CLIENT_LIMITS;
    expect(answer.ms).toBeLessThan(2 * upMs + 2 * maxAttempts * requestHandler.socketTimeout);
  }, 300_000);
});

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACT_CHUNK_BYTES,
  ARTIFACT_HEADERS,
  artifactPullSchema,
  artifactPullSubject,
  artifactPushSubject,
  decodeArtifactMessage,
  encodeArtifactMessage,
} from '@perfwatch/common';
import { text } from 'node:stream/consumers';
import { createGunzip, gzipSync } from 'node:zlib';
import { createArtifactCache } from '../../agent/src/artifact-cache.ts';
import { captureRequests, captureTrace } from '../../agent/src/artifact-capture.ts';
import { startArtifactSender } from '../../agent/src/artifact-sender.ts';
import { createArtifactReceiver } from '../../gateway/src/artifacts/artifact-receiver.ts';
import { createFsArtifactStore } from '../../gateway/src/artifacts/store/fs-artifact-store.ts';
import type { ArtifactKey, ArtifactStore } from '../../gateway/src/artifacts/store/artifact-store.ts';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { natsWithClient, silentLogger } from '../support/test-services.ts';

// A run's artifacts from the agent's cache to the gateway's fs store over a real nats-server,
// and what the gateway does with senders that do not keep to the contract.
let stack: Awaited<ReturnType<typeof natsWithClient>>;
let gatewayNc: NatsConnection;
let agentNc: NatsConnection;
let dir: string;
let store: ArtifactStore;
beforeAll(async () => {
  stack = await natsWithClient();
  gatewayNc = stack.client;
  agentNc = await connect({ servers: stack.nats.url });
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifacts-'));
  store = createFsArtifactStore({ dir });
});
afterAll(async () => {
  await agentNc?.drain();
  await stack?.dispose();
  await rm(dir, { recursive: true, force: true });
});

const key = (kind: ArtifactKey['kind'], snapshotId = randomBytes(6).toString('hex')): ArtifactKey => ({
  orgId: 'org1',
  projectId: 'p1',
  snapshotId,
  device: 'mobile',
  location: 'tokyo',
  kind,
});

async function stored(k: ArtifactKey): Promise<string | null> {
  const artifact = await store.get(k);
  return artifact ? text(artifact.body.pipe(createGunzip())) : null;
}

describe('artifact transfer over NATS', () => {
  it("brings the chosen run's requests and a trace of many chunks into the store, the others staying with the agent", async () => {
    const cache = createArtifactCache();
    const lhr = loadLhr('mobile', 1);
    const requests = (await captureRequests(lhr))!;
    // Random URLs: a trace that compresses badly, so it crosses many chunks.
    const events = Array.from({ length: 40_000 }, (_, i) => ({ ts: i, name: randomBytes(24).toString('hex') }));
    const trace = (await captureTrace({ traceEvents: events }))!;
    expect(trace.gzip.byteLength).toBeGreaterThan(4 * ARTIFACT_CHUNK_BYTES);
    cache.keep('job-median', { requests, trace });
    cache.keep('job-other', { requests });
    const sender = startArtifactSender({
      nc: agentNc,
      location: 'tokyo',
      agentId: 'tokyo.a-1',
      cache,
      logger: silentLogger,
    });
    await agentNc.flush();
    try {
      const receiver = createArtifactReceiver({ nc: gatewayNc, store, logger: silentLogger });
      const source = { location: 'tokyo' as const, agentId: 'tokyo.a-1', jobId: 'job-median' };
      const snapshotId = 'snap1';
      const [gotRequests, gotTrace] = await Promise.all([
        receiver.receive({ ...source, key: key('requests', snapshotId) }),
        receiver.receive({ ...source, key: key('trace', snapshotId) }),
      ]);
      expect(gotRequests).toEqual({ state: 'stored', bytes: requests.gzip.byteLength });
      expect(gotTrace).toEqual({ state: 'stored', bytes: trace.gzip.byteLength });
      const lines = (await stored(key('requests', snapshotId)))!.trimEnd().split('\n');
      const items = (lhr.audits['network-requests']!.details as { items: Array<{ url: string }> }).items;
      expect(lines.slice(0, -1).map((line) => (JSON.parse(line) as { url: string }).url)).toEqual(
        items.map((i) => i.url),
      );
      const keptTrace = JSON.parse((await stored(key('trace', snapshotId)))!) as { traceEvents: unknown[] };
      expect(keptTrace.traceEvents).toEqual(events);
      // Sent once: a second pull finds nothing, and the run nobody chose is still there.
      expect(await receiver.receive({ ...source, key: key('requests') })).toMatchObject({ state: 'missing' });
      expect(cache.runs).toBe(1);
    } finally {
      await sender.stop();
    }
  });

  it("records missing when the run's agent kept nothing of it, and the agent stays serving", async () => {
    const sender = startArtifactSender({
      nc: agentNc,
      location: 'tokyo',
      agentId: 'tokyo.a-2',
      cache: createArtifactCache(),
      logger: silentLogger,
    });
    await agentNc.flush();
    try {
      const receiver = createArtifactReceiver({ nc: gatewayNc, store, logger: silentLogger });
      const source = { location: 'tokyo' as const, agentId: 'tokyo.a-2', jobId: 'never-ran' };
      for (const kind of ['requests', 'trace'] as const)
        expect(await receiver.receive({ ...source, key: key(kind) })).toEqual({
          state: 'missing',
          reason: `NO_ARTIFACT: no ${kind} kept for job never-ran`,
        });
    } finally {
      await sender.stop();
    }
  });

  it("records a store's failure as missing without its message (a path on the gateway's disk), which only the log has", async () => {
    const cache = createArtifactCache();
    cache.keep('job-1', { requests: (await captureRequests(loadLhr('mobile', 1)))! });
    const sender = startArtifactSender({
      nc: agentNc,
      location: 'tokyo',
      agentId: 'tokyo.a-3',
      cache,
      logger: silentLogger,
    });
    await agentNc.flush();
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    try {
      // A directory under a file: every write fails with ENOTDIR and the path.
      await writeFile(join(dir, 'a-file'), 'not a directory');
      const broken = createFsArtifactStore({ dir: join(dir, 'a-file', 'below') });
      const receiver = createArtifactReceiver({ nc: gatewayNc, store: broken, logger });
      const outcome = await receiver.receive({
        location: 'tokyo',
        agentId: 'tokyo.a-3',
        jobId: 'job-1',
        key: key('requests'),
      });
      expect(outcome).toEqual({
        state: 'missing',
        reason: "the artifact store did not keep it (the gateway's log says why)",
      });
      expect(lines.join('')).toMatch(/ENOTDIR/);
    } finally {
      await sender.stop();
    }
  });

  it('records missing, never throwing, when no agent has the run', async () => {
    const receiver = createArtifactReceiver({ nc: gatewayNc, store, logger: silentLogger, pullTimeoutMs: 500 });
    const k = key('requests');
    const outcome = await receiver.receive({ location: 'tokyo', agentId: 'gone', jobId: 'j', key: k });
    expect(outcome.state).toBe('missing');
    expect(await store.get(k)).toBeNull();
  });
});

/** An agent that answers pulls and then sends what `send` makes of the push subject. */
function hostileAgent(agentId: string, send: (subject: string, bytes: number) => Promise<void>, bytes = 600_000) {
  return agentNc.subscribe(artifactPullSubject('tokyo', agentId), {
    callback: (_error, msg) => {
      const pull = decodeArtifactMessage(artifactPullSchema, msg.data);
      msg.respond(encodeArtifactMessage({ ok: true, bytes, truncated: false }));
      void send(artifactPushSubject('tokyo', pull.token), bytes).catch(() => undefined);
    },
  });
}

/** `size` bytes of a gzip of random bytes, from `at`: a sender's chunk the gateway inflates without error. */
const gzipped = gzipSync(randomBytes(1_000_000), { level: 0 });
const gzipAt = (at: number, size: number) => gzipped.subarray(at, at + size);

async function chunk(subject: string, seq: number, data: Uint8Array, last = false) {
  const h = natsHeaders();
  h.set(ARTIFACT_HEADERS.seq, String(seq));
  if (last) h.set(ARTIFACT_HEADERS.last, '1');
  return agentNc.request(subject, data, { timeout: 5000, headers: h });
}

describe('a hostile sender', () => {
  const receiver = () =>
    createArtifactReceiver({
      nc: gatewayNc,
      store,
      logger: silentLogger,
      pullTimeoutMs: 2000,
      chunkTimeoutMs: 500,
      transferTimeoutMs: 1500,
    });

  const sequenced = (seq: number) => {
    const h = natsHeaders();
    h.set(ARTIFACT_HEADERS.seq, String(seq));
    return h;
  };
  it.each([
    [
      'skips a sequence number',
      /chunk 2 where 1 was due/,
      async (s: string) => {
        await chunk(s, 0, gzipAt(0, 1000));
        await chunk(s, 2, gzipAt(1000, 1000), true);
      },
    ],
    [
      'sends a chunk over 256 KiB',
      /chunk of 262145 bytes/,
      async (s: string) => {
        await chunk(s, 0, new Uint8Array(ARTIFACT_CHUNK_BYTES + 1));
      },
    ],
    [
      'sends more than it announced',
      /sent of 600000 announced/,
      async (s: string) => {
        for (let seq = 0; seq < 4; seq++) await chunk(s, seq, gzipAt(seq * 200_000, 200_000));
      },
    ],
    [
      'never sends its last chunk',
      /no chunk for 500 ms/,
      async (s: string) => {
        await chunk(s, 0, gzipAt(0, 1000));
      },
    ],
    [
      'trickles small chunks, each within the chunk timeout',
      /not done within 1500 ms/,
      async (s: string) => {
        for (let seq = 0; seq < 600; seq++) {
          await chunk(s, seq, gzipAt(seq * 1000, 1000));
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      },
    ],
    [
      'floods without waiting for acknowledgements',
      /before the last was acknowledged/,
      async (s: string) => {
        for (let seq = 0; seq < 50; seq++)
          agentNc.publish(s, gzipAt(seq * 10_000, 10_000), { headers: sequenced(seq) });
      },
    ],
  ])('that %s leaves the artifact missing and nothing in the store', async (_why, reason, send) => {
    const agentId = `hostile-${randomBytes(4).toString('hex')}`;
    const sub = hostileAgent(agentId, send);
    await agentNc.flush();
    try {
      const k = key('trace');
      const outcome = await receiver().receive({ location: 'tokyo', agentId, jobId: 'j', key: k });
      expect(outcome).toEqual({ state: 'missing', reason: expect.stringMatching(reason) });
      expect(await store.get(k)).toBeNull();
    } finally {
      sub.unsubscribe();
    }
  });

  it.each([
    // 65 MiB of zeros gzip to about 64 kB: within the 2 MiB a requests artifact may be sent as.
    ['a gzip bomb', 'requests', /inflates past 67108864 bytes/, () => gzipSync(Buffer.alloc(65 * 1024 * 1024))],
    ['what is not gzip', 'trace', /not gzip/, () => Buffer.from('{"traceEvents":[]}\n'.repeat(100))],
  ] as const)(
    'that sends %s leaves the artifact missing and nothing in the store',
    async (_what, kind, reason, make) => {
      const body = make();
      const agentId = `hostile-${randomBytes(4).toString('hex')}`;
      const sub = hostileAgent(
        agentId,
        async (s) => {
          const count = Math.ceil(body.byteLength / ARTIFACT_CHUNK_BYTES);
          for (let seq = 0; seq < count; seq++)
            await chunk(
              s,
              seq,
              body.subarray(seq * ARTIFACT_CHUNK_BYTES, (seq + 1) * ARTIFACT_CHUNK_BYTES),
              seq === count - 1,
            );
        },
        body.byteLength,
      );
      await agentNc.flush();
      try {
        const k = key(kind);
        const outcome = await receiver().receive({ location: 'tokyo', agentId, jobId: 'j', key: k });
        expect(outcome).toEqual({ state: 'missing', reason: expect.stringMatching(reason) });
        expect(await store.get(k)).toBeNull();
      } finally {
        sub.unsubscribe();
      }
    },
  );

  it('cannot write into a transfer it was not given the token of', async () => {
    const guessed = artifactPushSubject('tokyo', randomBytes(24).toString('base64url'));
    await expect(chunk(guessed, 0, new Uint8Array(10), true)).rejects.toThrow(/no responders/i);
  });
});

/**
 * The gateway's memory while it streams many large artifacts at once: 100 traces of ~20 MiB
 * each (gzip bytes as an agent keeps them, within ARTIFACT_MAX_BYTES.trace) pulled at once over
 * a real nats-server from the agent's real sender (agent/src/artifact-sender.ts, its cache
 * holding them) by the gateway's receiver as shipped (at most ARTIFACT_TRANSFERS_AT_ONCE at a
 * time) into the artifact store (fs, and S3 on a real SeaweedFS), the receiver in a process of
 * its own (bench/artifact-streaming-receiver.ts) whose RSS is read from /proc. It must not hold
 * them: its growth is to follow the transfers it lets run at once, not the transfers asked nor
 * the bytes moved; each level beside the same with the limit at its largest (64, as good as none).
 *   BENCH_ONLY=artifacts npm run bench   (node bench/artifact-streaming.ts [transfers MiB fs|s3 atOnce])
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { z } from 'zod';
import { gzipSync } from 'node:zlib';
import { ARTIFACT_CHUNK_BYTES, ARTIFACT_MAX_BYTES, type ArtifactState } from '@perfwatch/common';
import { createArtifactCache } from '../agent/src/artifact-cache.ts';
import { startArtifactSender } from '../agent/src/artifact-sender.ts';
import { artifactStoreFromSettings } from '../gateway/src/artifacts/store/artifact-store-from-settings.ts';
import { artifactSettings } from '../gateway/src/settings/artifacts.ts';
import type { ArtifactKey } from '../gateway/src/artifacts/store/artifact-store.ts';
import { startNatsServer } from '../test/support/local-servers.ts';
import { startSeaweedFs } from '../test/support/seaweedfs.ts';
import { root } from './local-stack.ts';
import { peakRssMb, resetPeakRss, rssMb } from './process-stats.ts';

const MiB = 1024 * 1024;
const LOCATION = 'frankfurt';
const AGENT_ID = 'bench.sender-1';
/** The gateway image's young generation (2 × 16 MB semi-spaces), as the other benches run it. */
const IMAGE_NODE_FLAGS = ['--max-semi-space-size=16'];

/** Where the receiver keeps job `jobId`'s trace: one snapshot per transfer. */
export const streamingKey = (jobId: string): ArtifactKey => ({
  orgId: 'bench',
  projectId: 'streaming',
  snapshotId: jobId,
  device: 'mobile',
  location: LOCATION,
  kind: 'trace',
});

/** What the receiver's process answers: each transfer's state, the wall time, its memory before and at most. */
export interface ReceiverAnswer {
  states: ArtifactState[];
  ms: number;
  before: { rssMb: number; heapUsedMb: number; arrayBuffersMb: number };
  peaks: { rssMb: number; heapUsedMb: number; externalMb: number; arrayBuffersMb: number };
}

type StoreKind = 'fs' | 's3';

export interface StreamingFigures {
  store: StoreKind;
  transfers: number;
  /** ARTIFACT_TRANSFERS_AT_ONCE as the receiver's settings gave it (the schema's default when unset). */
  atOnce: number;
  /** Gzip bytes of each artifact, and of all. */
  artifactBytes: number;
  totalBytes: number;
  seconds: number;
  /** The receiver's RSS after a warm-up transfer, its VmHWM during the run, its highest sample. */
  baselineRssMb: number;
  peakRssMb: number;
  baselineHeapMb: number;
  baselineArrayBuffersMb: number;
  peaks: ReceiverAnswer['peaks'];
  /** Transfers stored whole: the file's bytes and SHA-256 those the sender had. */
  whole: number;
  missing: string[];
  loadAvg: [number, number];
}

/** A gzip of random bytes in stored blocks: incompressible, so its size is about its content's, under `bound`. */
function syntheticGzip(bound: number): Uint8Array {
  // Stored blocks cost 5 bytes per 64 KiB, the header and trailer 18: 4 KiB leaves room for both.
  const gzip = gzipSync(randomBytes(bound - 4096), { level: 0 });
  if (gzip.byteLength > bound) throw new Error(`synthetic artifact of ${gzip.byteLength} bytes, past ${bound}`);
  return gzip;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The sender's cache holding `count` traces (and a small one to warm the receiver with), and their digests. */
function filledCache(count: number, bound: number) {
  const cache = createArtifactCache({ maxRuns: count + 1, maxBytes: (count + 1) * bound, ttlMs: 3_600_000 });
  const digests = new Map<string, string>();
  let bytes = 0;
  const keep = (jobId: string, gzip: Uint8Array) => {
    cache.keep(jobId, { trace: { gzip, truncated: false, pieces: 1, total: 1 } });
    digests.set(jobId, sha256(gzip));
    return gzip.byteLength;
  };
  keep('warm-up', syntheticGzip(MiB));
  for (let i = 0; i < count; i++) bytes += keep(`job-${i}`, syntheticGzip(bound));
  return { cache, digests, bytes };
}

/** Each stored trace read back through the store: whole when its bytes hash as the sender's did. */
async function checkStored(settings: StoreSettings, digests: Map<string, string>, jobIds: string[]): Promise<string[]> {
  const { store } = artifactStoreFromSettings(settingsSchema.parse(settings));
  const wrong: string[] = [];
  for (const jobId of jobIds) {
    const stored = await store.get(streamingKey(jobId));
    const hash = createHash('sha256');
    if (stored) for await (const chunk of stored.body) hash.update(chunk as Buffer);
    if (!stored || hash.digest('hex') !== digests.get(jobId)) wrong.push(jobId);
  }
  return wrong;
}

type Receiver = ReturnType<typeof fork>;

const settingsSchema = z.object(artifactSettings.settings);
/** The gateway's artifact settings (ARTIFACT_*), as its environment gives them. */
type StoreSettings = Record<string, string>;

/** The store's settings, and what to stop once measured: a temporary directory, or a real S3 server (SeaweedFS). */
async function storeFor(kind: StoreKind, dir: string): Promise<{ settings: StoreSettings; stop(): Promise<void> }> {
  if (kind === 'fs')
    return { settings: { ARTIFACT_STORE: 'fs', ARTIFACT_DIR: join(dir, 'store') }, stop: async () => {} };
  // SeaweedFS has exited at start here printing its usage, with the flags that start it every other time: tried again.
  const s3 = await startSeaweedFs().catch(async (error: unknown) => {
    process.stderr.write(`artifact streaming: SeaweedFS did not start, trying again: ${(error as Error).message}\n`);
    await sleep(5_000);
    return startSeaweedFs();
  });
  return {
    settings: {
      ARTIFACT_STORE: 's3',
      ARTIFACT_S3_ENDPOINT: s3.endpoint,
      ARTIFACT_S3_BUCKET: s3.bucket,
      ARTIFACT_S3_REGION: s3.region,
      ARTIFACT_S3_ACCESS_KEY_ID: s3.accessKeyId,
      ARTIFACT_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      ARTIFACT_S3_FORCE_PATH_STYLE: 'true',
    },
    stop: () => s3.stop(),
  };
}

async function ask(receiver: Receiver, jobIds: string[]): Promise<ReceiverAnswer> {
  const answered = once(receiver, 'message') as Promise<[ReceiverAnswer]>;
  receiver.send({ do: 'receive', location: LOCATION, agentId: AGENT_ID, jobIds });
  return (await answered)[0];
}

async function startReceiver(natsUrl: string, settings: StoreSettings): Promise<Receiver> {
  const args = [natsUrl, JSON.stringify(settings)];
  const receiver = fork(join(root, 'bench/artifact-streaming-receiver.ts'), args, {
    execArgv: IMAGE_NODE_FLAGS,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [first] = (await once(receiver, 'message')) as [unknown];
  if (first !== 'ready') throw new Error(`the receiver said ${JSON.stringify(first)}`);
  return receiver;
}

/** Pulls every trace at once through the receiver's process; its RSS read from /proc before and at its peak. */
async function pullAll(receiver: Receiver, jobIds: string[]) {
  const pid = receiver.pid!;
  // One transfer first, so the code and buffers a transfer needs are in the baseline.
  const warm = await ask(receiver, ['warm-up']);
  if (warm.states[0]?.state !== 'stored') throw new Error(`warm-up: ${JSON.stringify(warm.states[0])}`);
  const baselineRssMb = await rssMb(pid);
  await resetPeakRss(pid);
  const answer = await ask(receiver, jobIds);
  return { answer, baselineRssMb, peakRssMb: await peakRssMb(pid) };
}

/** `atOnce` unset: the gateway's default (ARTIFACT_TRANSFERS_AT_ONCE unset). */
async function measureArtifactStreaming(
  transfers = 100,
  artifactBound = ARTIFACT_MAX_BYTES.trace,
  kind: StoreKind = 'fs',
  atOnce?: number,
): Promise<StreamingFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifact-streaming-'));
  const nats = await startNatsServer({ binary: join(root, '.tools/bin/nats-server'), dir: join(dir, 'nats') });
  const store = await storeFor(kind, dir).catch(async (error: unknown) => {
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
  if (atOnce !== undefined) store.settings['ARTIFACT_TRANSFERS_AT_ONCE'] = String(atOnce);
  const nc = await connect({ servers: nats.url });
  const { cache, digests, bytes } = filledCache(transfers, artifactBound);
  const jobIds = Array.from({ length: transfers }, (_, i) => `job-${i}`);
  const logger = pino({ level: 'warn' });
  const sender = startArtifactSender({ nc, location: LOCATION, agentId: AGENT_ID, cache, logger });
  await nc.flush();
  const receiver = await startReceiver(nats.url, store.settings);
  const load = loadavg()[0]!;
  try {
    const { answer, baselineRssMb, peakRssMb } = await pullAll(receiver, jobIds);
    const notStored = answer.states.flatMap((s, i) => (s.state === 'stored' ? [] : [`${jobIds[i]}: ${s.reason}`]));
    const wrong = await checkStored(store.settings, digests, jobIds);
    return {
      store: kind,
      transfers,
      atOnce: settingsSchema.parse(store.settings).ARTIFACT_TRANSFERS_AT_ONCE,
      artifactBytes: bytes / transfers,
      totalBytes: bytes,
      seconds: answer.ms / 1000,
      baselineRssMb,
      peakRssMb,
      baselineHeapMb: answer.before.heapUsedMb,
      baselineArrayBuffersMb: answer.before.arrayBuffersMb,
      peaks: answer.peaks,
      whole: transfers - wrong.length,
      missing: notStored.length > 0 ? notStored : wrong.map((jobId) => `${jobId}: not as sent`),
      loadAvg: [load, loadavg()[0]!],
    };
  } finally {
    receiver.send({ do: 'exit' });
    await once(receiver, 'exit');
    await sender.stop();
    await nc.drain();
    await store.stop();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const mb = (n: number) => `${n.toFixed(0)} MiB`;
const growth = (f: StreamingFigures) => f.peakRssMb - f.baselineRssMb;

/** The limit at its largest (the setting's maximum): every transfer of a level runs at once. */
const UNLIMITED = 64;

/**
 * 100 traces of 20 MiB asked at once, with the shipped limit (ARTIFACT_TRANSFERS_AT_ONCE unset)
 * and with the limit at its largest, on each store; and on fs, with the shipped limit, the same
 * transfers carrying a tenth of the bytes and a tenth of the transfers: growth that follows
 * neither is the transfers let in at once, not the artifacts held.
 */
const STREAMING_LEVELS: ReadonlyArray<{ transfers: number; mib: number; store: StoreKind; atOnce?: number }> = [
  { transfers: 100, mib: 20, store: 'fs' },
  { transfers: 100, mib: 20, store: 'fs', atOnce: UNLIMITED },
  { transfers: 100, mib: 2, store: 'fs' },
  { transfers: 10, mib: 20, store: 'fs' },
  { transfers: 100, mib: 20, store: 's3' },
  { transfers: 100, mib: 20, store: 's3', atOnce: UNLIMITED },
];

/** A level that could not be measured (SeaweedFS that would not start): said in its row. */
interface NotMeasured {
  store: StoreKind;
  transfers: number;
  mib: number;
  atOnce: number | undefined;
  error: string;
}

export async function measureArtifactStreamingLevels(): Promise<Array<StreamingFigures | NotMeasured>> {
  const figures: Array<StreamingFigures | NotMeasured> = [];
  for (const { transfers, mib, store, atOnce } of STREAMING_LEVELS) {
    const bound = Math.min(mib * MiB, ARTIFACT_MAX_BYTES.trace);
    const level = await measureArtifactStreaming(transfers, bound, store, atOnce).catch((error: unknown) => {
      // The fs rows are the claim; an S3 server that will not start here leaves its rows unmeasured, not the section.
      if (store === 'fs') throw error;
      return { store, transfers, mib, atOnce, error: (error as Error).message.split(':')[0]!.slice(0, 200) };
    });
    process.stdout.write(`artifact streaming: ${JSON.stringify(level)}\n`);
    figures.push(level);
  }
  return figures;
}

const row = (f: StreamingFigures | NotMeasured) => {
  if ('error' in f)
    return `| S3 (SeaweedFS) | ${f.transfers} × ${f.mib} MiB | ${f.atOnce ?? 'default'} | not measured: ${f.error.replaceAll('|', '/')} |${' |'.repeat(11)}`;
  const growthMb = growth(f);
  const totalMb = f.totalBytes / MiB;
  const inFlightMb = (Math.min(f.transfers, f.atOnce) * ARTIFACT_CHUNK_BYTES) / MiB;
  const stored = `${f.whole} of ${f.transfers}${f.missing.length > 0 ? ` (not: ${f.missing.slice(0, 3).join('; ')})` : ''}`;
  return `| ${f.store === 'fs' ? 'fs' : 'S3 (SeaweedFS)'} | ${f.transfers} × ${(f.artifactBytes / MiB).toFixed(1)} MiB | ${f.atOnce} | ${mb(totalMb)} | ${f.seconds.toFixed(1)} s | ${(totalMb / f.seconds).toFixed(0)} MiB/s | ${mb(f.baselineRssMb)} | ${mb(f.peakRssMb)} | **${mb(growthMb)}** | ${(growthMb / totalMb).toFixed(3)} | ${mb(inFlightMb)} | ${mb(f.baselineHeapMb)} → ${mb(f.peaks.heapUsedMb)} | ${mb(f.baselineArrayBuffersMb)} → ${mb(f.peaks.arrayBuffersMb)} | ${stored} | ${f.loadAvg.map((l) => l.toFixed(1)).join(' → ')} |`;
};

/** Per store, 100 × 20 MiB with the shipped limit beside the same with the limit at its largest: their growths' ratio. */
function limitRatios(figures: Array<StreamingFigures | NotMeasured>): string[] {
  const measured = figures.filter((f): f is StreamingFigures => !('error' in f) && f.transfers === 100);
  return (['fs', 's3'] as const).flatMap((kind) => {
    const full = measured.filter((f) => f.store === kind && f.artifactBytes > 10 * MiB);
    const limited = full.find((f) => f.atOnce < UNLIMITED);
    const unlimited = full.find((f) => f.atOnce === UNLIMITED);
    if (!limited || !unlimited) return [];
    const perTransfer = (f: StreamingFigures) => mb(growth(f) / Math.min(f.transfers, f.atOnce));
    return [
      `${kind === 'fs' ? 'fs' : 'S3 (SeaweedFS)'}: 100 × 20 MiB grew the receiver by ${mb(growth(limited))} with ${limited.atOnce} at once (the shipped limit) and by ${mb(growth(unlimited))} with ${unlimited.atOnce} at once (the setting's largest), limited ÷ unlimited **${(growth(limited) / growth(unlimited)).toFixed(2)}** (${perTransfer(limited)} and ${perTransfer(unlimited)} per transfer running; ${limited.seconds.toFixed(1)} s against ${unlimited.seconds.toFixed(1)} s).`,
    ];
  });
}

export function artifactStreamingSection(figures: Array<StreamingFigures | NotMeasured>): string[] {
  return [
    "### The gateway's memory while streaming traces at once (it must not hold them)",
    '',
    '| store | transfers asked at once × gzip bytes each | transfers at once (ARTIFACT_TRANSFERS_AT_ONCE) | bytes moved | wall time | throughput | receiver RSS before | peak RSS (VmHWM) | growth | growth ÷ bytes moved | chunks in flight (transfers at once × 256 KiB) | heap used, before → peak | array buffers, before → peak | stored whole (bytes and SHA-256) | load (1-min) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...figures.map(row),
    '',
    ...limitRatios(figures).flatMap((line) => [line, '']),
    "A real nats-server; the agent's real sender (agent/src/artifact-sender.ts) in the bench's process, its artifact cache holding every trace (gzip in stored blocks of random bytes: incompressible, so the bytes moved are the bytes kept, each within ARTIFACT_MAX_BYTES.trace); the gateway's receiver as gateway/src/runtime.ts wires it (gateway/src/artifacts/artifact-receiver.ts behind limited-receiver.ts, its limit ARTIFACT_TRANSFERS_AT_ONCE parsed by the gateway's settings: unset, the default 4; 64, the largest the setting allows, as good as none) writing into the artifact store the gateway's settings make (fs: a temporary directory, removed after; S3: a real SeaweedFS server, `weed server -s3`, started for the row and stopped after) in a process of its own with the gateway image's young generation (2 × 16 MB), so that its memory is the receiver's alone. Every transfer of a row is asked of the receiver at once; it lets the limit's number run, the others waiting before their pull is even sent; each runs in chunks of 256 KiB, the next sent only once the store took the last. The receiver's RSS before is after one warm-up transfer of 1 MiB; its peak is VmHWM from /proc (reset before), heap and array buffers the highest of process.memoryUsage() sampled every 20 ms in that process. Each stored file is read back through the store and its SHA-256 compared with the sender's.",
    '',
    "What a running transfer holds, from the code and the rows above (2026-11-26, all rows in one process, run from `npm run env`; the machine loaded by a full test run of another checkout, 1-minute load 4.6 at the start and up to 12.9, so the times are slow and the growths the upper end). On fs the store writes each chunk to its file as it comes and the chunk is acknowledged, letting the sender send the next, only once the store asked for it: one chunk of 256 KiB per transfer (up to twice that in the buffer nats.js gathers it in). With the shipped limit the fs growth, 71-89 MiB (67-87 MiB in a second run minutes later, load 2.0 → 10.5), is the same for 100 × 20 MiB, 100 × 2 MiB and 10 × 20 MiB: it follows neither the transfers asked nor the bytes moved, and is almost all array buffers (23 → 92-111 MiB), chunks already written that V8 has not collected yet; 64 at once doubles it. On S3 (s3-artifact-store.ts) a transfer holds far more: the SDK's multipart upload gathers each 5 MiB part from the chunks and copies it into one buffer before sending it, and reads nothing while a part uploads: 12-17 MiB per running transfer ((148 − 81) ÷ 4 = 17 above the fs floor with 4 at once, 1,102 ÷ 64 = 17 with 64; 12 and 17 in the second run), so 64 at once grew the receiver by 1,102 MiB (array buffers 24 → 1,110 MiB; 100 at once, before the limit, 1,766 MiB), past the gateway's 512 MiB limit, while the shipped 4 grew it by 148 MiB. The second run gave about the same ratios: fs 87 against 168 MiB (0.52), S3 134 against 1,068 MiB (0.13). What the limit costs in time varies with the load: S3 took 60 s either way here, 47.5 s with 4 against 38.7 s with 64 in the second run; fs 26.4 against 20.6 s here, 37.2 against 19.0 s there; every row stored all its transfers whole, none timing out, since a transfer waiting its turn has not been asked for yet (the agent's cache keeps it 15 minutes). SeaweedFS, which once exited at start from `npm run bench`'s process printing its usage, started for both S3 rows here in the bench's process under npm's environment, and a `weed server` run by `npm run env` starts too: npm's variables are not the cause. Per weed's source, exit 2 with its usage is a flag it refused, given on the command line or by an environment variable named as one of `weed server`'s flags (read without a prefix: DIR, IP, DEBUG, MASTER, S3…), none of which npm or the bench sets; test/support/seaweedfs.ts's error now quotes the head of weed's log, where it names the flag.",
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = process.argv[2]
    ? [
        await measureArtifactStreaming(
          Number(process.argv[2]),
          process.argv[3] ? Number(process.argv[3]) * MiB : undefined,
          (process.argv[4] ?? 'fs') as StoreKind,
          process.argv[5] ? Number(process.argv[5]) : undefined,
        ),
      ]
    : await measureArtifactStreamingLevels();
  process.stdout.write(
    process.argv.includes('--json')
      ? `${JSON.stringify(figures[0])}\n`
      : `${artifactStreamingSection(figures).join('\n')}\n`,
  );
}

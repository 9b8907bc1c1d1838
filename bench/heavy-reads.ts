/**
 * The gateway's memory under heavy reads: `perfwatch gateway` (V8's young generation as its image
 * sets it), on the embedded store and on a MongoDB-wire server (FerretDB), serving two snapshots
 * that hold, in each of their 12 cells, the largest result it accepts from an agent (16 MiB of
 * JSON, test/support/largest-results.ts).
 * Measured from /proc: the RSS it holds after one small read (the baseline), and its peak
 * (VmHWM) while 1 compare runs alone, while 16 compares (24 results each) and 16 audits (12
 * results each, 192 MB of JSON) are asked at once, with its places for heavy reads as shipped
 * (MAX_HEAVY_READS, 4) and with one place per read (16). The bound on the growth over the
 * baseline is the places × HEAVY_READ_PEAK_BYTES and V8's young generation, which any load grows
 * (gateway/src/heavy-reads.ts); the ratio is the growth over it.
 *   node bench/heavy-reads.ts [embedded|mongo-wire] [reads=16]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatApiDateTime } from '@perfwatch/common';
import { MongoStore, SqliteStore, type Store } from '@perfwatch/gateway';
import {
  DEFAULT_HEAVY_READS,
  HEAVY_READ_PEAK_BYTES,
  YOUNG_GENERATION_BYTES,
} from '../gateway/src/snapshots/heavy-reads.ts';
import { readAtOnce, seedLargestResults, type ReadEnd } from '../test/support/largest-results.ts';
import { startFerretDb, startNatsServer } from '../test/support/local-servers.ts';
import { root, spawnServer } from './local-stack.ts';
import { peakRssMb, resetPeakRss, rssMb } from './process-stats.ts';

const MiB = 1024 * 1024;
/** The young generation the gateway's image gives V8 (deploy/gateway.Dockerfile). */
const IMAGE_NODE_FLAGS = ['--max-semi-space-size=16'];

export interface HeavyReadRow {
  what: string;
  places: number;
  reads: number;
  ok: number;
  refused: number;
  seconds: number;
  baselineMb: number;
  peakMb: number;
  growthMb: number;
  boundMb: number;
}

export type HeavyReadStore = 'embedded' | 'mongo-wire';

export interface HeavyReadFigures {
  store: HeavyReadStore;
  resultMb: number;
  resultGzipKb: number;
  rows: HeavyReadRow[];
}

const count = (ends: ReadEnd[], status: number) => ends.filter((e) => e.status === status).length;

/** The store the gateway reads, and the settings that point it there. */
async function storeFor(
  kind: HeavyReadStore,
  dir: string,
): Promise<{ store: Store; env: Record<string, string>; stop?: () => Promise<void> }> {
  if (kind === 'embedded')
    return { store: new SqliteStore({ path: join(dir, 'perfwatch.sqlite') }), env: { PERFWATCH_DATA_DIR: dir } };
  const ferret = await startFerretDb({ binary: join(root, '.tools/bin/ferretdb'), dir: join(dir, 'db') });
  const env = { MONGODB_URI: ferret.url, MONGODB_DB: 'heavy' };
  return { store: new MongoStore({ uri: ferret.url, dbName: 'heavy' }), env, stop: () => ferret.stop() };
}

export async function measureHeavyReads(
  kind: HeavyReadStore = 'embedded',
  reads = 4 * DEFAULT_HEAVY_READS,
): Promise<HeavyReadFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-heavy-reads-'));
  const nats = await startNatsServer({ binary: join(root, '.tools/bin/nats-server'), dir: join(dir, 'nats') });
  const { store, env, stop } = await storeFor(kind, dir).catch(async (error: unknown) => {
    await nats.stop();
    throw error;
  });
  try {
    const dates = [new Date('2026-11-01T10:00:00Z'), new Date('2026-11-02T10:00:00Z')];
    await store.init();
    const seeded = await seedLargestResults(store, dates);
    await store.close();
    const url = encodeURIComponent(seeded.url);
    const [from, to] = dates.map(formatApiDateTime);
    const compare = `/v1/compare?url=${url}&from=${from}&to=${to}`;
    const audit = `/v1/audit?url=${url}&date=${from}`;
    const oneCell = '&device=mobile&location=london';
    const rows: HeavyReadRow[] = [];
    for (const places of [DEFAULT_HEAVY_READS, reads]) {
      const server = await spawnServer(
        'gateway',
        { NATS_URL: nats.url, ...env, MAX_HEAVY_READS: String(places) },
        { nodeFlags: IMAGE_NODE_FLAGS },
      );
      try {
        const read = async (what: string, paths: string[]) => {
          // What the process holds after it has read something, before the reads measured.
          await readAtOnce(server.url, seeded.token, [compare + oneCell, audit + oneCell]);
          const baselineMb = await rssMb(server.pid);
          await resetPeakRss(server.pid);
          const started = performance.now();
          const ends = await readAtOnce(server.url, seeded.token, paths);
          const seconds = (performance.now() - started) / 1000;
          const peakMb = await peakRssMb(server.pid);
          const bad = ends.filter((e) => e.status !== 200 && e.status !== 503);
          if (bad.length > 0) throw new Error(`${what}: answered ${JSON.stringify(bad[0]).slice(0, 300)}`);
          const row = {
            what,
            places,
            reads: paths.length,
            ok: count(ends, 200),
            refused: count(ends, 503),
            seconds,
            baselineMb,
            peakMb,
            growthMb: peakMb - baselineMb,
            boundMb: (places * HEAVY_READ_PEAK_BYTES + YOUNG_GENERATION_BYTES) / MiB,
          };
          process.stdout.write(`heavy reads: ${JSON.stringify(row)}\n`);
          rows.push(row);
        };
        if (places === DEFAULT_HEAVY_READS) await read('compare, alone', [compare]);
        await read(
          `compares at once`,
          Array.from({ length: reads }, () => compare),
        );
        await read(
          `audits at once`,
          Array.from({ length: reads }, () => audit),
        );
      } finally {
        await server.stop();
      }
    }
    return {
      store: kind,
      resultMb: seeded.result.json.byteLength / MiB,
      resultGzipKb: seeded.result.gzip.byteLength / 1024,
      rows,
    };
  } finally {
    await stop?.();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureHeavyReads(
    (process.argv[2] ?? 'embedded') as HeavyReadStore,
    Number(process.argv[3] ?? 4 * DEFAULT_HEAVY_READS),
  );
  console.log(JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v), 2));
}

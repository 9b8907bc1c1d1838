/**
 * Shows that /v1/overview streams: a gateway process answers an overview of N_SMALL records and
 * then of N_LARGE records (default 1,000,000) seeded into a real MongoDB-wire server, and its
 * peak RSS (VmHWM) is read after each. The gateway runs with its old-generation heap capped at
 * HEAP_CAP_MB: a gateway that held the response in memory (≈270 MB of JSON for a million
 * records) could not finish at all, so finishing is itself the proof that it streams.
 *   node bench/overview-memory.ts [records=1000000]
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { MongoClient, ObjectId } from 'mongodb';
import { createAdmin, freePort, MongoStore, startFerretDb, startNatsServer } from '@perfwatch/gateway';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tools = join(root, '.tools/bin');
const HEAP_CAP_MB = 96;

export interface OverviewMemoryFigures {
  smallRecords: number;
  mediumRecords: number;
  largeRecords: number;
  heapCapMb: number;
  baselineRssMb: number;
  peakAfterSmallMb: number;
  peakAfterMediumMb: number;
  peakAfterLargeMb: number;
  largeResponseMb: number;
  largeSeconds: number;
  recordsPerSecond: number;
}

async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** Reads a streamed JSON array to its end, counting records without holding them. */
async function drainOverview(url: string, token: string, startDate: string, endDate: string): Promise<{ records: number; bytes: number }> {
  const res = await fetch(`${url}/v1/overview?startDate=${startDate}&endDate=${endDate}`, { headers: { Authorization: token } });
  if (res.status !== 200) throw new Error(`overview answered ${res.status}: ${await res.text()}`);
  const decoder = new TextDecoder();
  let records = 0;
  let bytes = 0;
  let tail = '';
  for await (const chunk of res.body!) {
    bytes += chunk.byteLength;
    const text = tail + decoder.decode(chunk, { stream: true });
    records += text.split('{"date":').length - 1;
    tail = text.slice(-9);
    records -= tail.split('{"date":').length - 1;
  }
  records += tail.split('{"date":').length - 1;
  return { records, bytes };
}

export async function measureOverviewMemory(largeRecords = 1_000_000, smallRecords = 10_000, mediumRecords = 100_000): Promise<OverviewMemoryFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-overview-'));
  const db = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const dbName = `bench_${randomUUID().slice(0, 8)}`;
  const store = new MongoStore({ uri: db.url, dbName });
  await store.init();
  const admin = createAdmin(store);
  const { user, token } = await admin.createUser('bench');
  await store.close();

  // Seeded straight into the collection the gateway reads, as snapshots would have written it:
  // the small set on 2025-01-01, the medium one over the next 10 days, the large one over the
  // 365 days after those.
  const client = new MongoClient(db.url);
  const kpis = client.db(dbName).collection('kpis');
  const userId = new ObjectId(user.id);
  const seed = async (count: number, firstDay: number, days: number) => {
    const perBatch = 10_000;
    for (let done = 0; done < count; done += perBatch) {
      const docs = Array.from({ length: Math.min(perBatch, count - done) }, (_, i) => {
        const n = done + i;
        const date = new Date(Date.UTC(2025, 0, 1 + firstDay + (n % days), 12, Math.floor(n / days) % 60, n % 60));
        return { userId, snapshotId: new ObjectId(), projectId: new ObjectId(), date, domain: 'shop.example', url: `https://shop.example/p${n % 50}`, device: n % 2 ? 'mobile' : 'desktop', location: 'london', updateType: 'scheduled', section: 'LIGHTHOUSE', kpi: 'performance', data: { si: 1200.5, fcp: 800.1, fmp: null, tti: 2100.7, fCPUi: null, mpFID: 120, score: 93 } };
      });
      await kpis.insertMany(docs, { ordered: false });
    }
  };
  await seed(smallRecords, 0, 1);
  await seed(mediumRecords, 1, 10);
  await seed(largeRecords, 11, 365);
  await client.close();

  const port = await freePort();
  const gateway = spawn(process.execPath, [join(root, 'bin/perfwatch.js'), 'gateway'], {
    env: { ...process.env, NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB}`, PORT: String(port), HOST: '127.0.0.1', NATS_URL: nats.url, MONGODB_URI: db.url, MONGODB_DB: dbName, LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(`${url}/healthz`).catch(() => null))?.ok) break;
      if (i > 200) throw new Error('gateway did not start');
      await sleep(100);
    }
    const baselineRssMb = await peakRssMb(gateway.pid!);
    const small = await drainOverview(url, token, '2025-01-01', '2025-01-01');
    if (small.records !== smallRecords) throw new Error(`small overview returned ${small.records} records, expected ${smallRecords}`);
    const peakAfterSmallMb = await peakRssMb(gateway.pid!);
    const medium = await drainOverview(url, token, '2025-01-02', '2025-01-11');
    if (medium.records !== mediumRecords) throw new Error(`medium overview returned ${medium.records} records, expected ${mediumRecords}`);
    const peakAfterMediumMb = await peakRssMb(gateway.pid!);
    const started = performance.now();
    const large = await drainOverview(url, token, '2025-01-12', '2026-01-11');
    const largeSeconds = (performance.now() - started) / 1000;
    if (large.records !== largeRecords) throw new Error(`large overview returned ${large.records} records, expected ${largeRecords}`);
    const peakAfterLargeMb = await peakRssMb(gateway.pid!);
    return { smallRecords, mediumRecords, largeRecords, heapCapMb: HEAP_CAP_MB, baselineRssMb, peakAfterSmallMb, peakAfterMediumMb, peakAfterLargeMb, largeResponseMb: large.bytes / 2 ** 20, largeSeconds, recordsPerSecond: largeRecords / largeSeconds };
  } finally {
    gateway.kill('SIGTERM');
    await new Promise((resolve) => gateway.once('exit', resolve));
    await nats.stop();
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureOverviewMemory(Number(process.argv[2] ?? 1_000_000));
  console.log(JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v), 2));
}

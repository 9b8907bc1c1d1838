/**
 * /v1/overview at 10k, 100k and 1M records, on both stores: the embedded one (`perfwatch start`,
 * SQLite) and a MongoDB-wire server (`perfwatch gateway` on FerretDB, with the indexes the
 * gateway creates). For each level: the records per second a client reads, the server's peak
 * RSS (VmHWM) after it, and — as the bound — the same query read straight from the store in
 * this process (node:sqlite, or the MongoDB driver). The server runs with its old-generation
 * heap capped at HEAP_CAP_MB: a server that held the response (≈300 MB of JSON for a million
 * records) could not finish at all, so finishing is itself the proof that it streams.
 *   node bench/overview-memory.ts [embedded|mongo-wire] [large=1000000]
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MongoClient, ObjectId } from 'mongodb';
import { createAdmin, KPI_ORDER, KPI_PROJECTION, MongoStore, SqliteStore } from '@perfwatch/gateway';
import { startFerretDb, startNatsServer } from '../test/support/local-servers.ts';
import { root, spawnServer, type ServerProcess } from './local-stack.ts';
import { peakRssMb } from './process-stats.ts';

const tools = join(root, '.tools/bin');
const HEAP_CAP_MB = Number(process.env['BENCH_HEAP_CAP_MB'] ?? 96);
const SEMI_SPACE_MB = Number(process.env['BENCH_SEMI_SPACE_MB'] ?? 16);
const DAY_MS = 86_400_000;
// Within the gateway's retention (RETENTION_DAYS, 400 by default): the oldest seeded day.
const FIRST_DAY = Math.floor(Date.now() / DAY_MS) - 380;

export type OverviewStore = 'embedded' | 'mongo-wire';

interface OverviewLevel {
  records: number;
  mb: number;
  seconds: number;
  recordsPerSecond: number;
  /** The same query read straight from the store in the bench process. */
  directRecordsPerSecond: number;
  peakRssMb: number;
}

export interface OverviewFigures {
  store: OverviewStore;
  heapCapMb: number;
  baselineRssMb: number;
  levels: OverviewLevel[];
}

/** Reads a streamed JSON array to its end, counting records without holding them. */
async function drainOverview(
  url: string,
  token: string,
  startDate: string,
  endDate: string,
): Promise<{ records: number; bytes: number }> {
  const res = await fetch(`${url}/v1/overview?startDate=${startDate}&endDate=${endDate}`, {
    headers: { Authorization: token },
  });
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

/** A KPI record as snapshots write it, the n-th of a level spread over `days` from `firstDay`. */
function record(n: number, firstDay: number, days: number) {
  return {
    date: new Date(
      (FIRST_DAY + firstDay + (n % days)) * DAY_MS + 12 * 3_600_000 + (Math.floor(n / days) % 3600) * 1000,
    ),
    domain: 'shop.example',
    url: `https://shop.example/p${n % 50}`,
    device: n % 2 ? 'mobile' : 'desktop',
    location: 'london',
    updateType: 'scheduled',
    section: 'LIGHTHOUSE',
    kpi: 'performance',
    data: {
      si: 1200.5,
      fcp: 800.1,
      fmp: null,
      tti: 2100.7,
      fCPUi: null,
      mpFID: 120,
      score: 93,
      lcp: 1500.2,
      tbt: 120,
      cls: 0.012,
      ttfb: 300.1,
      inp: null,
    },
  };
}

/** A store seeded with `levels` record sets on consecutive day ranges, served by a process of its own. */
interface Served {
  token: string;
  server: ServerProcess;
  /** Reads the records of [from, to) straight from the store; resolves to their count. */
  direct(from: Date, to: Date): Promise<number>;
  /** Adds a level's records, before it is read, where the store was not seeded with them all at once. */
  add(set: RecordSet): Promise<void>;
  stop(): Promise<void>;
}

/** V8's heap bounds for the server: its old generation capped, its young one a fixed size (see SEMI_SPACE_MB). */
const V8_FLAGS = [
  `--max-old-space-size=${HEAP_CAP_MB}`,
  `--min-semi-space-size=${SEMI_SPACE_MB}`,
  `--max-semi-space-size=${SEMI_SPACE_MB}`,
];
/** How long the server may take to become ready: tries 100 ms apart (30 s). */
const READY_TRIES = 300;

type RecordSet = { count: number; firstDay: number; days: number };

/** Every level's records written straight into the file, in one transaction. */
function seedRows(db: DatabaseSync, userId: string, levels: RecordSet[]): void {
  // Each 20 records hang on a snapshot of their own: the gateway deletes records of none.
  const snapshot = db.prepare(
    "INSERT INTO snapshots (id, project_id, user_id, update_id, url, domain, date, update_type, available) VALUES (?, ?, ?, ?, 'https://shop.example/', 'shop.example', ?, 'scheduled', '[]')",
  );
  const insert = db.prepare(
    'INSERT INTO kpis (snapshot_id, project_id, user_id, date, domain, url, device, location, update_type, section, kpi, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  db.exec('BEGIN');
  for (const { count, firstDay, days } of levels) {
    for (let n = 0; n < count; n++) {
      const r = record(n, firstDay, days);
      const id = `s${firstDay}-${Math.floor(n / 20)}`;
      if (n % 20 === 0) snapshot.run(id, id, userId, id, r.date.getTime());
      insert.run(
        id,
        'p',
        userId,
        r.date.getTime(),
        r.domain,
        r.url,
        r.device,
        r.location,
        r.updateType,
        r.section,
        r.kpi,
        JSON.stringify(r.data),
      );
    }
  }
  db.exec('COMMIT');
}

async function serveEmbedded(dir: string, levels: RecordSet[]): Promise<Served> {
  const path = join(dir, 'perfwatch.sqlite');
  const store = new SqliteStore({ path });
  await store.init();
  const { user, token } = await createAdmin(store).createUser('bench');
  await store.close();
  const db = new DatabaseSync(path);
  seedRows(db, user.id, levels);
  const server = await spawnServer(
    'start',
    { PERFWATCH_DATA_DIR: dir, PERFWATCH_DEMO_PORT: '0' },
    { nodeFlags: V8_FLAGS, stdio: ['ignore', 'ignore', 'inherit'], readyTries: READY_TRIES },
  ).catch((error: unknown) => {
    db.close();
    throw error;
  });
  const query = db.prepare(
    'SELECT date, domain, url, device, location, update_type, section, kpi, data FROM kpis WHERE user_id = ? AND date >= ? AND date < ? ORDER BY date, url, device, location, section, kpi',
  );
  return {
    token,
    server,
    async direct(from, to) {
      let count = 0;
      for (const _row of query.iterate(user.id, from.getTime(), to.getTime())) count++;
      return count;
    },
    async add() {},
    async stop() {
      db.close();
    },
  };
}

/**
 * FerretDB v1 uses no index for these queries: each read scans the whole collection, and costs
 * the same for 10 records as for all of them. Each level's records are added just before it is
 * read, so a read scans about what it returns, as it would through an index.
 */
async function serveMongoWire(dir: string): Promise<Served> {
  const ferret = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const dbName = `bench_${randomUUID().slice(0, 8)}`;
  const store = new MongoStore({ uri: ferret.url, dbName });
  await store.init(); // the gateway's indexes
  const { user, token } = await createAdmin(store).createUser('bench');
  await store.close();
  const client = new MongoClient(ferret.url);
  const kpis = client.db(dbName).collection('kpis');
  const userId = new ObjectId(user.id);
  const stopServers = async () => {
    await client.close();
    await nats.stop();
    await ferret.stop();
  };
  const server = await spawnServer(
    'gateway',
    { NATS_URL: nats.url, MONGODB_URI: ferret.url, MONGODB_DB: dbName },
    { nodeFlags: V8_FLAGS, readyTries: READY_TRIES },
  ).catch(async (error: unknown) => {
    await stopServers();
    throw error;
  });
  return {
    token,
    server,
    async direct(from, to) {
      // The gateway's query (gateway/src/store/mongo-store.ts streamKpis), documents decoded by the driver.
      const cursor = kpis
        .find(
          { userId, date: { $gte: from, $lt: to }, pending: { $ne: true } },
          {
            projection: KPI_PROJECTION,
          },
        )
        .sort(KPI_ORDER)
        .batchSize(500);
      let count = 0;
      for await (const _doc of cursor) count++;
      return count;
    },
    async add({ count, firstDay, days }) {
      for (let done = 0; done < count; done += 10_000) {
        const docs = Array.from({ length: Math.min(10_000, count - done) }, (_, i) => ({
          userId,
          snapshotId: new ObjectId(),
          projectId: new ObjectId(),
          ...record(done + i, firstDay, days),
        }));
        await kpis.insertMany(docs, { ordered: false });
      }
    },
    stop: stopServers,
  };
}

/** `large` 0: the 10k and 100k levels only. */
export async function measureOverview(store: OverviewStore, large = 1_000_000): Promise<OverviewFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-overview-'));
  // 10k records on one day, 100k over the next 10, the large set over the 365 after those.
  const sets = [
    { count: 10_000, firstDay: 0, days: 1 },
    { count: 100_000, firstDay: 1, days: 10 },
    ...(large > 0 ? [{ count: large, firstDay: 11, days: 365 }] : []),
  ];
  const served = store === 'embedded' ? await serveEmbedded(dir, sets) : await serveMongoWire(dir);
  try {
    const baselineRssMb = await peakRssMb(served.server.pid);
    const levels: OverviewLevel[] = [];
    for (const set of sets) {
      const { count, firstDay, days } = set;
      await served.add(set);
      const from = new Date((FIRST_DAY + firstDay) * DAY_MS);
      const last = new Date((FIRST_DAY + firstDay + days - 1) * DAY_MS);
      const day = (d: Date) => d.toISOString().slice(0, 10);
      const started = performance.now();
      const read = await drainOverview(served.server.url, served.token, day(from), day(last));
      const seconds = (performance.now() - started) / 1000;
      if (read.records !== count)
        throw new Error(`overview of ${store} returned ${read.records} records, expected ${count}`);
      const peakRss = await peakRssMb(served.server.pid);
      const directStarted = performance.now();
      const directCount = await served.direct(from, new Date(last.getTime() + DAY_MS));
      const directSeconds = (performance.now() - directStarted) / 1000;
      if (directCount !== count)
        throw new Error(`the direct query of ${store} returned ${directCount} records, expected ${count}`);
      const level = {
        records: count,
        mb: read.bytes / 2 ** 20,
        seconds,
        recordsPerSecond: count / seconds,
        directRecordsPerSecond: count / directSeconds,
        peakRssMb: peakRss,
      };
      process.stdout.write(
        `overview ${store}: ${count} records (${level.mb.toFixed(0)} MB) in ${seconds.toFixed(1)} s, ${Math.round(level.recordsPerSecond)} records/s (direct ${Math.round(level.directRecordsPerSecond)}), peak RSS ${peakRss.toFixed(0)} MB\n`,
      );
      levels.push(level);
    }
    return { store, heapCapMb: HEAP_CAP_MB, baselineRssMb, levels };
  } finally {
    await served.server.stop();
    await served.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureOverview(
    (process.argv[2] ?? 'embedded') as OverviewStore,
    Number(process.argv[3] ?? 1_000_000),
  );
  console.log(JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v), 2));
}

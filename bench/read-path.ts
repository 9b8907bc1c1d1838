/**
 * The read path under load: /v1/audit and /v1/overview of a real gateway process (autocannon,
 * C connections) against a MongoDB-wire server holding SNAPSHOTS snapshots and their KPI
 * records, versus the same database queries issued straight through the MongoDB driver with the
 * same concurrency, in alternating rounds. Reports throughput, p50/p99 latency and the ratio.
 *   node bench/read-path.ts [snapshots]
 *
 * Scale: FerretDB v1 (SQLite), the only MongoDB-wire server this machine has, uses no index for
 * any filter but `_id`: every other find scans its collection (measured: 2.9 s for one findOne
 * over 20,000 documents of 6 kB). 100,000 snapshots would make every request a multi-second
 * scan on both sides (measured: 2,000 snapshots, 6.4 s per raw audit query under 10 connections), so
 * on FerretDB the default is 300 snapshots, and the ratio compares two DB-bound paths. The
 * gateway's own cost per request is reported beside it (its CPU time from /metrics). Set BENCH_MONGODB_URI to a
 * real MongoDB to run the full 100,000 snapshots / 800,000 KPI records (the default there).
 *
 * Seeding: one snapshot is stored through MongoStore.saveSnapshot (so every document has the
 * shape the gateway writes), then cloned with new ids, projects and dates by insertMany. Its
 * Lighthouse result is a real one with audit details dropped (~6 kB gzip): a full result
 * (32 kB gzip) for 100,000 snapshots would be 3 GB to seed on a bench machine.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { MongoClient, ObjectId, type Document } from 'mongodb';
import { formatApiDateTime } from '@perfwatch/common';
import { createAdmin, freePort, MongoStore, receivedRun, startFerretDb, startNatsServer, type ProjectRecord } from '@perfwatch/gateway';
import { buildLocationSnapshot } from '../gateway/src/snapshot-builder.ts';
import { loadLeanLhr } from '../test/support/lhr-fixtures.ts';
import { root } from './local-stack.ts';

const tools = join(root, '.tools/bin');
const PROJECTS = 100;
const DOMAINS = 10;
const EVERY_MS = 8 * 3_600_000;
// Within the gateway's retention (RETENTION_DAYS, 400 by default), which would delete older ones.
const FIRST = Math.floor(Date.now() / 86_400_000 - 360) * 86_400_000;
const EXTERNAL_URI = process.env['BENCH_MONGODB_URI'];
export const DEFAULT_SNAPSHOTS = EXTERNAL_URI ? 100_000 : 300;
const CONNECTIONS = 10;
const ROUND_SECONDS = Number(process.env['BENCH_READ_SECONDS'] ?? 10);
const ROUNDS = 2;

export interface Load {
  requestsPerSecond: number;
  /** Gateway CPU time per request (gateway side only). */
  cpuMsPerRequest?: number;
  p50Ms: number;
  p99Ms: number;
}

export interface ReadPathFigures {
  snapshots: number;
  kpiRecords: number;
  seedSeconds: number;
  overviewRecordsPerRequest: number;
  audit: { gateway: Load; raw: Load; ratio: number };
  overview: { gateway: Load; raw: Load; ratio: number };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** `work` run by `connections` loops for `seconds`: the driver-side twin of autocannon. */
async function closedLoop(seconds: number, connections: number, work: (n: number) => Promise<void>): Promise<Load> {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const started = performance.now();
        await work(n++);
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { requestsPerSecond: latencies.length / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

async function gatewayCpuSeconds(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
}

async function cannon(url: string, token: string, path: (n: number) => string, seconds: number): Promise<Load> {
  let n = 0;
  const cpuBefore = await gatewayCpuSeconds(url);
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { Authorization: token },
    requests: [{ setupRequest: (req) => ({ ...req, path: path(n++) }) }],
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors under load`);
  const cpuMsPerRequest = ((await gatewayCpuSeconds(url)) - cpuBefore) * 1000 / result.requests.total;
  return { requestsPerSecond: result.requests.average, p50Ms: result.latency.p50, p99Ms: result.latency.p99, cpuMsPerRequest };
}

const mean = (loads: Load[]): Load => ({
  requestsPerSecond: loads.reduce((s, l) => s + l.requestsPerSecond, 0) / loads.length,
  p50Ms: loads.reduce((s, l) => s + l.p50Ms, 0) / loads.length,
  p99Ms: loads.reduce((s, l) => s + l.p99Ms, 0) / loads.length,
  ...(loads[0]?.cpuMsPerRequest === undefined ? {} : { cpuMsPerRequest: loads.reduce((s, l) => s + l.cpuMsPerRequest!, 0) / loads.length }),
});

export async function measureReadPath(snapshots = DEFAULT_SNAPSHOTS): Promise<ReadPathFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-read-'));
  const db = EXTERNAL_URI ? { url: EXTERNAL_URI, stop: async () => {} } : await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const dbName = `read_${randomUUID().slice(0, 8)}`;
  const store = new MongoStore({ uri: db.url, dbName });
  await store.init();
  const admin = createAdmin(store);
  const { user, token } = await admin.createUser('bench');
  const projects: ProjectRecord[] = [];
  for (let p = 0; p < PROJECTS; p++) projects.push(await admin.addProject('bench', `https://d${p % DOMAINS}.example/page-${p}`, { locations: ['london'], runs: 1 }));

  const seedStarted = performance.now();
  const lhr = loadLeanLhr('mobile');
  const template = await buildLocationSnapshot('mobile', 'london', [receivedRun({ jobId: 'seed', agentId: 'seed', location: 'london', device: 'mobile', runIndex: 0, startedAt: new Date().toISOString(), lighthouseMs: 6_000, lhr })]);
  const templateDate = await store.saveSnapshot({ project: projects[0]!, updateId: randomUUID(), date: new Date(Date.UTC(2020, 0, 1)), updateType: 'scheduled', results: [template] });
  await store.close();

  const client = new MongoClient(db.url);
  const database = client.db(dbName);
  const [snapshotsC, resultsC, kpisC] = [database.collection('snapshots'), database.collection('results'), database.collection('kpis')];
  const tplSnapshot = (await snapshotsC.findOne({ date: templateDate }))!;
  const tplResults = await resultsC.find({ snapshotId: tplSnapshot['_id'] }).toArray();
  const tplKpis = await kpisC.find({ snapshotId: tplSnapshot['_id'] }).toArray();
  await Promise.all([snapshotsC.deleteOne({ _id: tplSnapshot['_id'] }), resultsC.deleteMany({ snapshotId: tplSnapshot['_id'] }), kpisC.deleteMany({ snapshotId: tplSnapshot['_id'] })]);

  const at = (i: number) => ({ project: projects[i % PROJECTS]!, date: new Date(FIRST + Math.floor(i / PROJECTS) * EVERY_MS) });
  const clone = (doc: Document, fields: Document) => {
    const copy: Document = { ...doc, _id: new ObjectId() };
    for (const [key, value] of Object.entries(fields)) if (key in doc) copy[key] = value;
    return copy;
  };
  const batch = 500;
  for (let from = 0; from < snapshots; from += batch) {
    const s: Document[] = [];
    const r: Document[] = [];
    const k: Document[] = [];
    for (let i = from; i < Math.min(snapshots, from + batch); i++) {
      const { project, date } = at(i);
      const snapshot = clone(tplSnapshot, { projectId: new ObjectId(project.id), url: project.url, domain: project.domain, updateId: randomUUID(), date });
      const fields = { snapshotId: snapshot['_id'], projectId: snapshot['projectId'], url: project.url, domain: project.domain, date };
      s.push(snapshot);
      for (const doc of tplResults) r.push(clone(doc, fields));
      for (const doc of tplKpis) k.push(clone(doc, fields));
    }
    await Promise.all([snapshotsC.insertMany(s, { ordered: false }), resultsC.insertMany(r, { ordered: false }), kpisC.insertMany(k, { ordered: false })]);
  }
  const kpiRecords = await kpisC.countDocuments();
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  process.stdout.write(`read path: seeded ${snapshots} snapshots, ${kpiRecords} KPI records in ${seedSeconds.toFixed(0)} s\n`);

  // The same pseudo-random picks for both sides.
  const pick = (n: number) => at((n * 7_919) % snapshots);
  const days = Math.floor(((snapshots / PROJECTS) * EVERY_MS) / 86_400_000);
  const overviewDay = (n: number) => ({ day: new Date(FIRST + ((n * 31) % days) * 86_400_000), domain: `d${n % DOMAINS}.example` });
  const auditPath = (n: number) => {
    const { project, date } = pick(n);
    return `/v1/audit?url=${encodeURIComponent(project.url)}&date=${formatApiDateTime(date)}`;
  };
  const overviewPath = (n: number) => {
    const { day, domain } = overviewDay(n);
    const d = day.toISOString().slice(0, 10);
    return `/v1/overview?startDate=${d}&endDate=${d}&domain=${domain}`;
  };
  const userId = new ObjectId(user.id);
  const rawAudit = async (n: number) => {
    const { project, date } = pick(n);
    const snapshot = await snapshotsC.findOne({ projectId: new ObjectId(project.id), date, status: 'complete' });
    if (!snapshot) throw new Error('seeded snapshot not found');
    await resultsC.find({ snapshotId: snapshot['_id'] }).toArray();
  };
  const rawOverview = async (n: number) => {
    const { day, domain } = overviewDay(n);
    await kpisC
      .find({ userId, date: { $gte: day, $lt: new Date(day.getTime() + 86_400_000) }, domain }, { projection: { _id: 0, date: 1, domain: 1, url: 1, device: 1, location: 1, updateType: 1, section: 1, kpi: 1, data: 1 } })
      .sort({ date: 1, url: 1, device: 1, location: 1, section: 1, kpi: 1 })
      .toArray();
  };
  const { day: sampleDay, domain: sampleDomain } = overviewDay(1);
  const overviewRecordsPerRequest = await kpisC.countDocuments({ userId, date: { $gte: sampleDay, $lt: new Date(sampleDay.getTime() + 86_400_000) }, domain: sampleDomain });

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gateway = spawn(process.execPath, [join(root, 'bin/perfwatch.js'), 'gateway'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', NATS_URL: nats.url, MONGODB_URI: db.url, MONGODB_DB: dbName, LOG_LEVEL: 'warn', RATE_LIMIT_READS_PER_MINUTE: '100000000', RETENTION_DAYS: '3650' },
    stdio: 'inherit',
  });
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(`${url}/readyz`).catch(() => null))?.ok) break;
      if (i > 200) throw new Error('gateway did not start');
      await sleep(100);
    }
    // Warm both paths (connections, caches, JIT) before anything is counted.
    await closedLoop(2, CONNECTIONS, rawAudit);
    await cannon(url, token, auditPath, 2);
    const runs = { auditGateway: [] as Load[], auditRaw: [] as Load[], overviewGateway: [] as Load[], overviewRaw: [] as Load[] };
    for (let round = 0; round < ROUNDS; round++) {
      runs.auditRaw.push(await closedLoop(ROUND_SECONDS, CONNECTIONS, rawAudit));
      runs.auditGateway.push(await cannon(url, token, auditPath, ROUND_SECONDS));
      runs.overviewRaw.push(await closedLoop(ROUND_SECONDS, CONNECTIONS, rawOverview));
      runs.overviewGateway.push(await cannon(url, token, overviewPath, ROUND_SECONDS));
    }
    const audit = { gateway: mean(runs.auditGateway), raw: mean(runs.auditRaw) };
    const overview = { gateway: mean(runs.overviewGateway), raw: mean(runs.overviewRaw) };
    const figures = {
      snapshots,
      kpiRecords,
      seedSeconds,
      overviewRecordsPerRequest,
      audit: { ...audit, ratio: audit.gateway.requestsPerSecond / audit.raw.requestsPerSecond },
      overview: { ...overview, ratio: overview.gateway.requestsPerSecond / overview.raw.requestsPerSecond },
    };
    process.stdout.write(`read path: audit ${figures.audit.ratio.toFixed(2)} × raw driver, overview ${figures.overview.ratio.toFixed(2)} × raw driver\n`);
    return figures;
  } finally {
    gateway.kill('SIGTERM');
    await new Promise((resolve) => gateway.once('exit', resolve));
    if (EXTERNAL_URI) await database.dropDatabase();
    await client.close();
    await nats.stop();
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureReadPath(Number(process.argv[2] ?? DEFAULT_SNAPSHOTS));
  console.log(JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v), 2));
}

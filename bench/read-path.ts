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
import { get as httpGet } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { MongoClient, ObjectId, type Collection, type Document } from 'mongodb';
import { formatApiDateTime } from '@perfwatch/common';
import { DatabaseSync } from 'node:sqlite';
import {
  createAdmin,
  KPI_ORDER,
  KPI_PROJECTION,
  MongoStore,
  receivedRun,
  SqliteStore,
  type ProjectRecord,
} from '@perfwatch/gateway';
import { startFerretDb, startNatsServer } from '../test/support/local-servers.ts';
import { buildLocationSnapshot } from '../gateway/src/updates/snapshot-builder.ts';
import { loadLeanLhr } from '../test/support/lhr-fixtures.ts';
import { root, spawnServer } from './local-stack.ts';

const tools = join(root, '.tools/bin');
const PROJECTS = 100;
const DOMAINS = 10;
const EVERY_MS = 8 * 3_600_000;
// Within the gateway's retention (RETENTION_DAYS, 400 by default), which would delete older ones.
const FIRST = Math.floor(Date.now() / 86_400_000 - 360) * 86_400_000;
const EXTERNAL_URI = process.env['BENCH_MONGODB_URI'];
const DEFAULT_SNAPSHOTS = EXTERNAL_URI ? 100_000 : 300;
// 8 KPI records per snapshot of the template: 125,000 snapshots make a million.
const EMBEDDED_SNAPSHOTS = 125_000;
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
  store: ReadStore;
  snapshots: number;
  kpiRecords: number;
  seedSeconds: number;
  overviewRecordsPerRequest: number;
  audit: { gateway: Load; raw: Load; ratio: number };
  overview: { gateway: Load; raw: Load; ratio: number };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

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
  return {
    requestsPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/**
 * From the gateway's /metrics, on a connection of its own: the direct side's store reads are
 * synchronous and hold this process's event loop for whole rounds, so a pooled connection the
 * gateway closed meanwhile (keep-alive timeout) would be taken for open.
 */
function gatewayCpuSeconds(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    httpGet(`${url}/metrics`, { agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1] ?? Number.NaN)));
    }).on('error', reject);
  });
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
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors under load`);
  const cpuMsPerRequest = (((await gatewayCpuSeconds(url)) - cpuBefore) * 1000) / result.requests.total;
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    cpuMsPerRequest,
  };
}

const mean = (loads: Load[]): Load => ({
  requestsPerSecond: loads.reduce((s, l) => s + l.requestsPerSecond, 0) / loads.length,
  p50Ms: loads.reduce((s, l) => s + l.p50Ms, 0) / loads.length,
  p99Ms: loads.reduce((s, l) => s + l.p99Ms, 0) / loads.length,
  ...(loads[0]?.cpuMsPerRequest === undefined
    ? {}
    : { cpuMsPerRequest: loads.reduce((s, l) => s + l.cpuMsPerRequest!, 0) / loads.length }),
});

/** How a store was seeded, and the same reads made straight on it. */
interface Seeded {
  token: string;
  kpiRecords: number;
  /** Records of one domain on one day. */
  recordsOn(day: Date, domain: string): Promise<number>;
  rawAudit(project: ProjectRecord, date: Date): Promise<void>;
  rawOverview(day: Date, domain: string): Promise<void>;
  /** The gateway's environment for this store. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Snapshots made of one template snapshot (stored by the store itself), `at(i)` the i-th one's project and date. */
async function template(
  store: MongoStore | SqliteStore,
): Promise<{ token: string; userId: string; projects: ProjectRecord[]; date: Date }> {
  await store.init();
  const admin = createAdmin(store);
  const { user, token } = await admin.createUser('bench');
  const projects: ProjectRecord[] = [];
  for (let p = 0; p < PROJECTS; p++)
    projects.push(
      await admin.addProject('bench', `https://d${p % DOMAINS}.example/page-${p}`, { locations: ['london'], runs: 1 }),
    );
  const lhr = loadLeanLhr('mobile');
  const cell = await buildLocationSnapshot('mobile', 'london', [
    receivedRun({
      jobId: 'seed',
      agentId: 'seed',
      location: 'london',
      device: 'mobile',
      runIndex: 0,
      startedAt: new Date().toISOString(),
      lighthouseMs: 6_000,
      lhr,
    }),
  ]);
  const date = await store.saveSnapshot({
    project: projects[0]!,
    updateId: randomUUID(),
    date: new Date(Date.UTC(2020, 0, 1)),
    updateType: 'scheduled',
    results: [cell],
  });
  return { token, userId: user.id, projects, date };
}

const at = (projects: ProjectRecord[], i: number) => ({
  project: projects[i % PROJECTS]!,
  date: new Date(FIRST + Math.floor(i / PROJECTS) * EVERY_MS),
});

/**
 * The embedded store (`perfwatch gateway` with PERFWATCH_DATA_DIR): cloned by SQL from the
 * template; the direct reads are the store's own methods that /v1/audit and /v1/overview call
 * (SqliteStore in this process, on the same file), so the ratio is what HTTP, authentication
 * and writing the answer cost on top of the store.
 */
async function seedEmbedded(dir: string, snapshots: number): Promise<Seeded & { projects: ProjectRecord[] }> {
  const path = join(dir, 'perfwatch.sqlite');
  const seedStore = new SqliteStore({ path });
  const { token, userId, projects, date } = await template(seedStore);
  await seedStore.close();
  const db = new DatabaseSync(path);
  const tpl = db.prepare('SELECT id FROM snapshots WHERE date = ?').get(date.getTime()) as { id: string };
  const insertSnapshot = db.prepare(
    'INSERT INTO snapshots (id, project_id, user_id, update_id, url, domain, date, update_type, available, missing, kpi_version) SELECT ?, ?, user_id, ?, ?, ?, ?, update_type, available, missing, kpi_version FROM snapshots WHERE id = ?',
  );
  const insertResults = db.prepare(
    'INSERT INTO results (snapshot_id, seq, device, location, median, runs, element_count, crux, lighthouse, checks) SELECT ?, seq, device, location, median, runs, element_count, crux, lighthouse, checks FROM results WHERE snapshot_id = ?',
  );
  const insertKpis = db.prepare(
    'INSERT INTO kpis (snapshot_id, project_id, user_id, date, domain, url, device, location, update_type, section, kpi, data) SELECT ?, ?, user_id, ?, ?, ?, device, location, update_type, section, kpi, data FROM kpis WHERE snapshot_id = ?',
  );
  db.exec('BEGIN');
  for (let i = 0; i < snapshots; i++) {
    const { project, date: when } = at(projects, i);
    const id = randomUUID();
    insertSnapshot.run(id, project.id, randomUUID(), project.url, project.domain, when.getTime(), tpl.id);
    insertResults.run(id, tpl.id);
    insertKpis.run(id, project.id, when.getTime(), project.domain, project.url, tpl.id);
  }
  for (const table of ['kpis', 'results', 'snapshots'])
    db.prepare(`DELETE FROM ${table} WHERE ${table === 'snapshots' ? 'id' : 'snapshot_id'} = ?`).run(tpl.id);
  db.exec('COMMIT');
  const kpiRecords = (db.prepare('SELECT count(*) AS n FROM kpis').get() as { n: number }).n;
  db.close();
  const direct = new SqliteStore({ path });
  await direct.init();
  const overview = (day: Date, domain: string) =>
    direct.streamKpis({ userId, from: day, to: new Date(day.getTime() + 86_400_000), domain });
  return {
    token,
    projects,
    kpiRecords,
    async recordsOn(day, domain) {
      let n = 0;
      for await (const batch of overview(day, domain)) n += batch.length;
      return n;
    },
    async rawAudit(project, when) {
      if (!(await direct.findProject(userId, project.url)) || !(await direct.findSnapshot(project.id, when)))
        throw new Error('seeded snapshot not found');
    },
    async rawOverview(day, domain) {
      for await (const _batch of overview(day, domain));
    },
    env: { PERFWATCH_DATA_DIR: dir },
    close: () => direct.close(),
  };
}

/**
 * A MongoDB-wire server (FerretDB here, or BENCH_MONGODB_URI): cloned through the driver from
 * the template; the direct reads are the store's queries issued through the driver.
 */
async function seedMongoWire(dir: string, snapshots: number): Promise<Seeded & { projects: ProjectRecord[] }> {
  const db = EXTERNAL_URI
    ? { url: EXTERNAL_URI, stop: async () => {} }
    : await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const dbName = `read_${randomUUID().slice(0, 8)}`;
  const store = new MongoStore({ uri: db.url, dbName });
  const { token, userId: user, projects, date: templateDate } = await template(store);
  await store.close();

  const client = new MongoClient(db.url);
  const database = client.db(dbName);
  const collections = {
    snapshots: database.collection('snapshots'),
    results: database.collection('results'),
    kpis: database.collection('kpis'),
  };
  await cloneTemplate(collections, await takeTemplate(collections, templateDate), projects, snapshots);
  const { snapshots: snapshotsC, results: resultsC, kpis: kpisC } = collections;
  const kpiRecords = await kpisC.countDocuments();
  const userId = new ObjectId(user);
  const overviewQuery = (day: Date, domain: string) => ({
    userId,
    date: { $gte: day, $lt: new Date(day.getTime() + 86_400_000) },
    domain,
  });
  return {
    token,
    projects,
    kpiRecords,
    recordsOn: (day, domain) => kpisC.countDocuments(overviewQuery(day, domain)),
    async rawAudit(project, date) {
      const snapshot = await snapshotsC.findOne({ projectId: new ObjectId(project.id), date, status: 'complete' });
      if (!snapshot) throw new Error('seeded snapshot not found');
      await resultsC.find({ snapshotId: snapshot['_id'] }).toArray();
    },
    async rawOverview(day, domain) {
      await kpisC.find(overviewQuery(day, domain), { projection: KPI_PROJECTION }).sort(KPI_ORDER).toArray();
    },
    env: { MONGODB_URI: db.url, MONGODB_DB: dbName },
    async close() {
      if (EXTERNAL_URI) await database.dropDatabase();
      await client.close();
      await db.stop();
    },
  };
}

interface SnapshotCollections {
  snapshots: Collection;
  results: Collection;
  kpis: Collection;
}

/** The template snapshot's documents, taken out of the database to be cloned. */
async function takeTemplate({ snapshots, results, kpis }: SnapshotCollections, date: Date) {
  const snapshot = (await snapshots.findOne({ date }))!;
  const of = { snapshotId: snapshot['_id'] };
  const template = { snapshot, results: await results.find(of).toArray(), kpis: await kpis.find(of).toArray() };
  await Promise.all([snapshots.deleteOne({ _id: snapshot['_id'] }), results.deleteMany(of), kpis.deleteMany(of)]);
  return template;
}

/** `count` snapshots cloned from the template through the driver, 500 at a time, spread over `projects`. */
async function cloneTemplate(
  collections: SnapshotCollections,
  template: { snapshot: Document; results: Document[]; kpis: Document[] },
  projects: ProjectRecord[],
  count: number,
): Promise<void> {
  const clone = (doc: Document, fields: Document) => {
    const copy: Document = { ...doc, _id: new ObjectId() };
    for (const [key, value] of Object.entries(fields)) if (key in doc) copy[key] = value;
    return copy;
  };
  const batch = 500;
  for (let from = 0; from < count; from += batch) {
    const docs = { snapshots: [] as Document[], results: [] as Document[], kpis: [] as Document[] };
    for (let i = from; i < Math.min(count, from + batch); i++) {
      const { project, date } = at(projects, i);
      const { url, domain } = project;
      const projectId = new ObjectId(project.id);
      const snapshot = clone(template.snapshot, { projectId, url, domain, updateId: randomUUID(), date });
      const fields = { snapshotId: snapshot['_id'], projectId, url, domain, date };
      docs.snapshots.push(snapshot);
      for (const doc of template.results) docs.results.push(clone(doc, fields));
      for (const doc of template.kpis) docs.kpis.push(clone(doc, fields));
    }
    await Promise.all([
      collections.snapshots.insertMany(docs.snapshots, { ordered: false }),
      collections.results.insertMany(docs.results, { ordered: false }),
      collections.kpis.insertMany(docs.kpis, { ordered: false }),
    ]);
  }
}

export type ReadStore = 'embedded' | 'mongo-wire';

export async function measureReadPath(
  kind: ReadStore,
  snapshots = kind === 'embedded' ? EMBEDDED_SNAPSHOTS : DEFAULT_SNAPSHOTS,
): Promise<ReadPathFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-read-'));
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const seedStarted = performance.now();
  const seeded = await (kind === 'embedded' ? seedEmbedded : seedMongoWire)(dir, snapshots);
  const { token, kpiRecords } = seeded;
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  process.stdout.write(
    `read path ${kind}: seeded ${snapshots} snapshots, ${kpiRecords} KPI records in ${seedSeconds.toFixed(0)} s\n`,
  );
  const loads = readLoads(seeded, snapshots);
  const { day: sampleDay, domain: sampleDomain } = loads.overviewDay(1);
  const overviewRecordsPerRequest = await seeded.recordsOn(sampleDay, sampleDomain);
  const gateway = await spawnServer('gateway', {
    ...seeded.env,
    NATS_URL: nats.url,
    RATE_LIMIT_READS_PER_MINUTE: '100000000',
    RETENTION_DAYS: '3650',
  });
  try {
    const { audit, overview } = await measureRounds(gateway.url, token, loads);
    const figures = {
      store: kind,
      snapshots,
      kpiRecords,
      seedSeconds,
      overviewRecordsPerRequest,
      audit: { ...audit, ratio: audit.gateway.requestsPerSecond / audit.raw.requestsPerSecond },
      overview: { ...overview, ratio: overview.gateway.requestsPerSecond / overview.raw.requestsPerSecond },
    };
    process.stdout.write(
      `read path: audit ${figures.audit.ratio.toFixed(2)} × raw driver, overview ${figures.overview.ratio.toFixed(2)} × raw driver\n`,
    );
    return figures;
  } finally {
    await gateway.stop();
    await seeded.close();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The requests of both sides, request `n` the same pseudo-random pick on each. */
function readLoads(seeded: Seeded & { projects: ProjectRecord[] }, snapshots: number) {
  const pick = (n: number) => at(seeded.projects, (n * 7_919) % snapshots);
  const days = Math.floor(((snapshots / PROJECTS) * EVERY_MS) / 86_400_000);
  const overviewDay = (n: number) => ({
    day: new Date(FIRST + ((n * 31) % days) * 86_400_000),
    domain: `d${n % DOMAINS}.example`,
  });
  return {
    overviewDay,
    auditPath(n: number) {
      const { project, date } = pick(n);
      return `/v1/audit?url=${encodeURIComponent(project.url)}&date=${formatApiDateTime(date)}`;
    },
    overviewPath(n: number) {
      const { day, domain } = overviewDay(n);
      const d = day.toISOString().slice(0, 10);
      return `/v1/overview?startDate=${d}&endDate=${d}&domain=${domain}`;
    },
    async rawAudit(n: number) {
      const { project, date } = pick(n);
      await seeded.rawAudit(project, date);
    },
    async rawOverview(n: number) {
      const { day, domain } = overviewDay(n);
      await seeded.rawOverview(day, domain);
    },
  };
}

/** ROUNDS rounds of each side in turn, after a warm-up of both (connections, caches, JIT). */
async function measureRounds(url: string, token: string, loads: ReturnType<typeof readLoads>) {
  await closedLoop(2, CONNECTIONS, loads.rawAudit);
  await cannon(url, token, loads.auditPath, 2);
  const runs = {
    auditGateway: [] as Load[],
    auditRaw: [] as Load[],
    overviewGateway: [] as Load[],
    overviewRaw: [] as Load[],
  };
  for (let round = 0; round < ROUNDS; round++) {
    runs.auditRaw.push(await closedLoop(ROUND_SECONDS, CONNECTIONS, loads.rawAudit));
    runs.auditGateway.push(await cannon(url, token, loads.auditPath, ROUND_SECONDS));
    runs.overviewRaw.push(await closedLoop(ROUND_SECONDS, CONNECTIONS, loads.rawOverview));
    runs.overviewGateway.push(await cannon(url, token, loads.overviewPath, ROUND_SECONDS));
  }
  return {
    audit: { gateway: mean(runs.auditGateway), raw: mean(runs.auditRaw) },
    overview: { gateway: mean(runs.overviewGateway), raw: mean(runs.overviewRaw) },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const kind = (process.argv[2] ?? 'embedded') as ReadStore;
  const figures = await measureReadPath(kind, process.argv[3] ? Number(process.argv[3]) : undefined);
  console.log(JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v), 2));
}

/**
 * The gateway's own cost at scale: agents are replaced by responders that answer after a
 * fixed delay (over a real nats-server), the gateway is a real `perfwatch gateway` process on
 * a real MongoDB-wire server, and K sync updates are sent at once, each 6 locations × 2
 * devices × 3 runs. Reports completion time over the ideal (the delay × the waves the
 * responders' capacity allows) and the gateway's CPU and memory per update (from its own
 * /metrics). Responders answer with a real Lighthouse result whose audit details are dropped
 * (~40 kB), so what is measured is dispatch, merge and persistence, not result size.
 *   node bench/dispatch-scale.ts [levels=1,10,100] [kinds=whole,parts]
 */
import { openSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { gzipSync } from 'node:zlib';
import {
  DEVICES,
  digestRun,
  LOCATIONS,
  type AuditReply,
  type LighthouseResult,
  type RunDigest,
} from '@perfwatch/common';
import { encodeReplyBytes, startAgent, type PageRunner, type ReplyEncoder } from '@perfwatch/agent';
import { createAdmin, MongoStore, SqliteStore } from '@perfwatch/gateway';
import { startNatsServer } from '../test/support/local-servers.ts';
import { loadLeanLhr } from '../test/support/lhr-fixtures.ts';
import { root, spawnServer, type ServerProcess } from './local-stack.ts';
import { cpuMs, peakRssMb, resetPeakRss } from './process-stats.ts';
import { askAll } from './update-clients.ts';

const DELAY_MS = 200;
const RESPONDERS_PER_LOCATION = 4;
const CAPACITY = 25;
const RUNS = 3;
const tools = join(root, '.tools/bin');
const SCRAPE_EVERY_MS = 250;
/**
 * Runs the stand-in fleet takes at once. The gateway may offer as many (MAX_RUNS_IN_FLIGHT, as
 * an operator sets it for a fleet this size): at the default 256 it could use 43 % of the
 * fleet, and the ideal would be out of reach whatever its speed.
 */
const FLEET_CAPACITY = LOCATIONS.length * RESPONDERS_PER_LOCATION * CAPACITY;
/**
 * The gateway's store: the embedded file by default (`perfwatch gateway` with
 * PERFWATCH_DATA_DIR), or a real MongoDB. Not FerretDB v1: it uses no index but `_id`, so each
 * snapshot's writes scan the whole KPI collection (measured: 100 concurrent updates took 450 s
 * to store), and the bench would measure that instead of the gateway.
 */
const EXTERNAL_URI = process.env['BENCH_MONGODB_URI'];

/**
 * Reply encoders for the responders that cost them next to nothing, so the two cores are the
 * gateway's: each result's compressed JSON and digest are made once, beforehand (`prepare`),
 * and a reply only compresses its few hundred bytes of run facts around them. A whole reply
 * (agents before v1.5) is three gzip members, which inflate as one text.
 */
function replayedReplies(): { prepare(lhr: LighthouseResult): void; whole: ReplyEncoder; parts: ReplyEncoder } {
  const prepared = new Map<string, { gzip: Buffer; digest: RunDigest }>();
  const key = (lhr: LighthouseResult) => `${lhr.requestedUrl}|${lhr.configSettings?.formFactor}`;
  const of = (body: AuditReply) => {
    if (!body.ok) return null;
    const { lhr, ...run } = body.result;
    return { run, ...prepared.get(key(lhr))! };
  };
  return {
    prepare(lhr) {
      prepared.set(key(lhr), { gzip: gzipSync(JSON.stringify(lhr)), digest: digestRun(lhr) });
    },
    async whole(body, shape, digest) {
      const reply = of(body);
      if (!reply) return encodeReplyBytes(body, shape, digest);
      const head = JSON.stringify({ ok: true, result: { ...reply.run, lhr: null } }).slice(0, -'null}}'.length);
      return { data: Buffer.concat([gzipSync(head), reply.gzip, gzipSync('}}')]), parts: null };
    },
    async parts(body, shape, digest) {
      const reply = of(body);
      if (!reply || shape === 'whole') return encodeReplyBytes(body, shape, digest);
      const json = Buffer.from(JSON.stringify({ ok: true, result: { ...reply.run, digest: reply.digest } }));
      const head = shape === 'parts, plain digest' ? json : gzipSync(json);
      return { data: Buffer.concat([head, reply.gzip]), parts: head.byteLength };
    },
  };
}

/** The gateway's CPU per /metrics scrape, over 20 scrapes of the idle gateway. */
async function scrapeCost(url: string, pid: number): Promise<number> {
  const before = await cpuMs(pid);
  for (let i = 0; i < 20; i++) await scrape(url);
  return ((await cpuMs(pid)) - before) / 20;
}

/** How the responders answer: whole results (agents before v1.5) or the digest and the result apart. */
export type ReplyKind = 'whole' | 'parts';

export interface ScaleLevel {
  concurrent: number;
  replies: ReplyKind;
  /** Until every run of the level was answered and merged (before the snapshots are stored). */
  dispatchedMs: number;
  dispatchedOverIdeal: number;
  ms: number;
  idealMs: number;
  overIdeal: number;
  cpuMsPerUpdate: number;
  peakRssMb: number;
  /** Sampled every SCRAPE_EVERY_MS: V8's heap in use, and memory outside it (buffers). */
  peakHeapMb: number;
  peakExternalMb: number;
  failed: number;
}

/** From the gateway's /metrics: runs it has finished dispatching (answered or failed), its V8 heap in use and its memory outside the heap (buffers). */
async function scrape(url: string): Promise<{ dispatched: number; heapMb: number; externalMb: number }> {
  const lines = (await (await fetch(`${url}/metrics`)).text()).split('\n');
  const value = (name: string) =>
    Number(lines.find((l) => l.startsWith(`${name} `))?.split(' ')[1] ?? Number.NaN) / 2 ** 20;
  const dispatched = lines
    .filter((l) => l.startsWith('perfwatch_dispatch_duration_seconds_count'))
    .reduce((sum, l) => sum + Number(l.split(' ')[1]), 0);
  return {
    dispatched,
    heapMb: value('nodejs_heap_size_used_bytes'),
    externalMb: value('nodejs_external_memory_bytes'),
  };
}

export async function measureDispatchScale(
  levels = [1, 10, 100, 1000],
  kinds: readonly ReplyKind[] = ['whole', 'parts'],
): Promise<ScaleLevel[]> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-scale-'));
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const { token, projects, storeEnv } = await seedProjects(levels, kinds, dir);
  const fleet = standInFleet(projects);
  const nc = await connect({ servers: nats.url });
  let agents: Array<{ stop(): Promise<void> }> = [];
  let gateway: ServerProcess | undefined;
  try {
    const figures: ScaleLevel[] = [];
    // Each level with both kinds of responder, one after the other: before and after side by side.
    for (const [concurrent, replies] of levels.flatMap((level) => kinds.map((kind) => [level, kind] as const))) {
      for (const agent of agents) await agent.stop();
      await gateway?.stop();
      gateway = await spawnLevelGateway({ ...storeEnv, NATS_URL: nats.url });
      agents = fleet.start(nc, replies);
      await sleep(1_000); // the new responders' announcements reach the gateway's registry
      const urls = projects.get(`${concurrent}/${replies}`)!;
      figures.push(await measureLevel(gateway, token, urls, replies));
    }
    return figures;
  } finally {
    await gateway?.stop();
    for (const agent of agents) await agent.stop();
    await nc.drain();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Every level's projects, made before the gateway starts: the embedded store's file is then
 * the gateway's alone. A project per update: a project's snapshots take distinct seconds.
 */
async function seedProjects(levels: number[], kinds: readonly ReplyKind[], dir: string) {
  const dbName = `scale_${Date.now()}`;
  const store = EXTERNAL_URI
    ? new MongoStore({ uri: EXTERNAL_URI, dbName })
    : new SqliteStore({ path: join(dir, 'perfwatch.sqlite') });
  await store.init();
  const admin = createAdmin(store);
  const { token } = await admin.createUser('scale');
  const projects = new Map<string, string[]>();
  let project = 0;
  for (const level of levels) {
    for (const kind of kinds) {
      const urls = Array.from({ length: level }, () => `https://scale-${project++}.example/`);
      for (const url of urls) await admin.addProject('scale', url, { locations: [...LOCATIONS], runs: RUNS });
      projects.set(`${level}/${kind}`, urls);
    }
  }
  await store.close();
  const storeEnv: Record<string, string> = EXTERNAL_URI
    ? { MONGODB_URI: EXTERNAL_URI, MONGODB_DB: dbName }
    : { PERFWATCH_DATA_DIR: dir };
  return { token, projects, storeEnv };
}

/** Responders in every location answering after DELAY_MS with the lean result of each project's page. */
function standInFleet(projects: Map<string, string[]>) {
  const logger = pino({ level: 'silent' });
  const results = { mobile: loadLeanLhr('mobile'), desktop: loadLeanLhr('desktop') };
  const replayed = replayedReplies();
  for (const urls of projects.values())
    for (const url of urls)
      for (const device of DEVICES) replayed.prepare({ ...results[device], requestedUrl: url, finalDisplayedUrl: url });
  const runner: PageRunner = {
    async run(request) {
      await sleep(DELAY_MS);
      return {
        lhr: { ...results[request.device], requestedUrl: request.url, finalDisplayedUrl: request.url },
        lighthouseMs: DELAY_MS,
      };
    },
    async close() {},
  };
  let generation = 0;
  return {
    start(nc: NatsConnection, replies: ReplyKind) {
      generation++;
      return LOCATIONS.flatMap((location) =>
        Array.from({ length: RESPONDERS_PER_LOCATION }, (_, i) =>
          startAgent({
            nc,
            location,
            runner,
            logger,
            agentId: `responder-${location}-${generation}-${i}`,
            capacity: CAPACITY,
            encodeReply: replies === 'whole' ? replayed.whole : replayed.parts,
          }),
        ),
      );
    },
  };
}

/** A gateway process of its own for each level and kind: no level starts with memory another one left. */
function spawnLevelGateway(env: Record<string, string>): Promise<ServerProcess> {
  // BENCH_GATEWAY_LOG=FILE keeps the gateway's warnings and errors.
  const log = process.env['BENCH_GATEWAY_LOG'];
  return spawnServer(
    'gateway',
    {
      ...env,
      RATE_LIMIT_UPDATES_PER_MINUTE: '1000000',
      MAX_SYNC_UPDATES_PER_USER: '1000',
      SHUTDOWN_READINESS_DELAY_MS: '0',
      MAX_RUNS_IN_FLIGHT: process.env['MAX_RUNS_IN_FLIGHT'] ?? String(FLEET_CAPACITY),
    },
    {
      nodeFlags: ['--max-semi-space-size=16', ...(process.env['BENCH_NODE_FLAGS']?.split(' ') ?? [])],
      stdio: ['ignore', log ? openSync(log, 'a') : 'ignore', log ? openSync(log, 'a') : 'ignore'],
    },
  );
}

/** One level: `urls.length` sync updates at once, timed, with the gateway's CPU and memory. */
async function measureLevel(
  gateway: ServerProcess,
  token: string,
  urls: string[],
  replies: ReplyKind,
): Promise<ScaleLevel> {
  const concurrent = urls.length;
  const runsBefore = (await scrape(gateway.url)).dispatched;
  await resetPeakRss(gateway.pid);
  const cpuBefore = await cpuMs(gateway.pid);
  const started = performance.now();
  const sampler = sampleGateway(gateway.url, started, runsBefore, concurrent * LOCATIONS.length * 2 * RUNS);
  const answers = await askAll(
    urls.map((url) => `${gateway.url}/v1/update?url=${encodeURIComponent(url)}`),
    token,
  );
  const ms = performance.now() - started;
  const refusal = answers.find((r) => r.status !== 200);
  if (refusal)
    process.stdout.write(
      `dispatch ${concurrent} concurrent: ${answers.filter((r) => r.status !== 200).length} failed, e.g. ${refusal.status} ${refusal.body.slice(0, 300)}\n`,
    );
  const sampled = await sampler.stop();
  // Seen by a scrape after the answers (a small level ends between two): the answers bound it.
  const dispatchedMs = Number.isNaN(sampled.dispatchedMs) ? ms : Math.min(sampled.dispatchedMs, ms);
  const cpuAfter = await cpuMs(gateway.pid);
  const scrapeCpuMs = await scrapeCost(gateway.url, gateway.pid);
  const waves = Math.ceil((concurrent * 2 * RUNS) / (RESPONDERS_PER_LOCATION * CAPACITY));
  const idealMs = waves * DELAY_MS;
  const level = {
    concurrent,
    replies,
    ms,
    dispatchedMs,
    idealMs,
    overIdeal: ms / idealMs,
    dispatchedOverIdeal: dispatchedMs / idealMs,
    cpuMsPerUpdate: Math.max(0, cpuAfter - cpuBefore - sampled.scrapes * scrapeCpuMs) / concurrent,
    peakRssMb: await peakRssMb(gateway.pid),
    peakHeapMb: sampled.peak.heapMb,
    peakExternalMb: sampled.peak.externalMb,
    failed: answers.filter((r) => r.status !== 200).length,
  };
  process.stdout.write(
    `dispatch ${concurrent} concurrent, ${replies} replies: all runs answered in ${Math.round(dispatchedMs)} ms (×${level.dispatchedOverIdeal.toFixed(2)} ideal), updates stored and answered in ${Math.round(ms)} ms (ideal ${idealMs} ms, ×${level.overIdeal.toFixed(2)}), ${level.cpuMsPerUpdate.toFixed(1)} ms CPU/update, peak RSS ${level.peakRssMb.toFixed(0)} MB (heap ${level.peakHeapMb.toFixed(0)} MB, buffers ${level.peakExternalMb.toFixed(0)} MB), ${level.failed} failed\n`,
  );
  return level;
}

/**
 * Scrapes the gateway's /metrics every SCRAPE_EVERY_MS until stopped: its peak heap and
 * buffers, and when every run was answered and merged (`runs` runs; what is left
 * is storing the snapshots). A scrape costs the gateway CPU, counted to be taken off.
 */
function sampleGateway(url: string, started: number, runsBefore: number, runs: number) {
  let dispatchedMs = Number.NaN;
  let scrapes = 0;
  let answered = false;
  const peak = { heapMb: 0, externalMb: 0 };
  const sampling = (async () => {
    while (!answered) {
      await sleep(SCRAPE_EVERY_MS);
      scrapes++;
      const now = await scrape(url).catch(() => null);
      if (!now) continue;
      if (process.env['BENCH_TRACE'])
        process.stdout.write(
          `  ${((performance.now() - started) / 1000).toFixed(1)} s: heap ${now.heapMb.toFixed(0)} MB, buffers ${now.externalMb.toFixed(0)} MB, runs ${now.dispatched - runsBefore}\n`,
        );
      peak.heapMb = Math.max(peak.heapMb, now.heapMb);
      peak.externalMb = Math.max(peak.externalMb, now.externalMb);
      if (Number.isNaN(dispatchedMs) && now.dispatched - runsBefore >= runs) dispatchedMs = performance.now() - started;
    }
  })();
  return {
    async stop() {
      answered = true;
      await sampling;
      return { dispatchedMs, scrapes, peak };
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await measureDispatchScale(
    (process.argv[2] ?? '1,10,100').split(',').map(Number),
    (process.argv[3] ?? 'whole,parts').split(',') as ReplyKind[],
  );
}

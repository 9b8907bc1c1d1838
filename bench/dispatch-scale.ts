/**
 * The gateway's own cost at scale: agents are replaced by responders that answer after a
 * fixed delay (over a real nats-server), the gateway is a real `perfwatch gateway` process on
 * a real MongoDB-wire server, and K sync updates are sent at once, each 6 locations × 2
 * devices × 3 runs. Reports completion time over the ideal (the delay × the waves the
 * responders' capacity allows) and the gateway's CPU and memory per update (from its own
 * /metrics). Responders answer with a real Lighthouse result whose audit details are dropped
 * (~40 kB), so what is measured is dispatch, merge and persistence, not result size.
 *   node bench/dispatch-scale.ts [levels=1,10,100,1000]
 */
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { LOCATIONS } from '@perfwatch/common';
import { startAgent, type AuditRunner } from '@perfwatch/agent';
import { createAdmin, freePort, MongoStore, startFerretDb, startNatsServer } from '@perfwatch/gateway';
import { loadLeanLhr } from '../test/support/lhr-fixtures.ts';
import { root } from './local-stack.ts';

const DELAY_MS = 200;
const RESPONDERS_PER_LOCATION = 4;
const CAPACITY = 25;
const RUNS = 3;
const tools = join(root, '.tools/bin');

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
  failed: number;
}

/**
 * A sync update over node:http: fetch (undici) gives up on a response whose headers take over
 * 300 s, and the largest level's last answers take longer than that to be stored.
 */
function get(url: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: { Authorization: token }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

/** Runs the gateway has finished dispatching (answered or failed), from its /metrics. */
async function dispatchedRuns(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith('perfwatch_dispatch_duration_seconds_count')).reduce((sum, l) => sum + Number(l.split(' ')[1]), 0);
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

export async function measureDispatchScale(levels = [1, 10, 100, 1000]): Promise<ScaleLevel[]> {
  const logger = pino({ level: 'silent' });
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-scale-'));
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const db = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const store = new MongoStore({ uri: db.url, dbName: 'scale' });
  await store.init();
  const admin = createAdmin(store);
  const { token } = await admin.createUser('scale');
  const results = { mobile: loadLeanLhr('mobile'), desktop: loadLeanLhr('desktop') };
  const nc = await connect({ servers: nats.url });
  let generation = 0;
  const startResponders = (replies: ReplyKind) => {
    generation++;
    return LOCATIONS.flatMap((location) =>
      Array.from({ length: RESPONDERS_PER_LOCATION }, (_, i) => {
        const runner: AuditRunner = {
          async run(request) {
            await sleep(DELAY_MS);
            return { lhr: { ...results[request.device], requestedUrl: request.url, finalDisplayedUrl: request.url }, lighthouseMs: DELAY_MS };
          },
          async close() {},
        };
        return startAgent({ nc, location, runner, logger, agentId: `responder-${location}-${generation}-${i}`, capacity: CAPACITY, wholeReplies: replies === 'whole' });
      }),
    );
  };
  let agents: ReturnType<typeof startResponders> = [];
  const port = await freePort();
  const gatewayUrl = `http://127.0.0.1:${port}`;
  const gateway = spawn(process.execPath, [...(process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_CPU_PROF']}`] : []), join(root, 'bin/perfwatch.js'), 'gateway'], {
    env: { ...process.env, NATS_URL: nats.url, MONGODB_URI: db.url, MONGODB_DB: 'scale', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_UPDATES_PER_MINUTE: '1000000', MAX_SYNC_UPDATES_PER_USER: '1000', SHUTDOWN_READINESS_DELAY_MS: '0' },
    // BENCH_GATEWAY_LOG=FILE keeps the gateway's warnings and errors.
    stdio: ['ignore', process.env['BENCH_GATEWAY_LOG'] ? openSync(process.env['BENCH_GATEWAY_LOG'], 'a') : 'ignore', process.env['BENCH_GATEWAY_LOG'] ? openSync(process.env['BENCH_GATEWAY_LOG'], 'a') : 'ignore'],
  });
  try {
    for (let i = 0; ; i++) {
      if (i > 100) throw new Error('gateway did not become ready');
      const ready = await fetch(`${gatewayUrl}/readyz`).then((r) => r.status === 200, () => false);
      if (ready) break;
      await sleep(200);
    }
    const figures: ScaleLevel[] = [];
    let project = 0;
    // Each level with both kinds of responder, one after the other: before and after side by side.
    for (const [concurrent, replies] of levels.flatMap((level) => (['whole', 'parts'] as const).map((kind) => [level, kind] as const))) {
      for (const agent of agents) await agent.stop();
      agents = startResponders(replies);
      await sleep(1_000); // the new responders' announcements reach the gateway's registry
      // A project per update: a project's snapshots take distinct seconds.
      const urls: string[] = [];
      for (let i = 0; i < concurrent; i++) {
        const url = `https://scale-${project++}.example/`;
        await admin.addProject('scale', url, { locations: [...LOCATIONS], runs: RUNS });
        urls.push(url);
      }
      const cpuBefore = await metric(gatewayUrl, 'process_cpu_seconds_total');
      const runsBefore = await dispatchedRuns(gatewayUrl);
      let peakRss = 0;
      let dispatchedMs = Number.NaN;
      let sampling = true;
      const started = performance.now();
      const sampler = (async () => {
        while (sampling) {
          peakRss = Math.max(peakRss, await metric(gatewayUrl, 'process_resident_memory_bytes').catch(() => 0));
          // Every run answered and merged: what is left is storing the snapshots.
          if (Number.isNaN(dispatchedMs) && (await dispatchedRuns(gatewayUrl).catch(() => 0)) - runsBefore >= concurrent * LOCATIONS.length * 2 * RUNS) dispatchedMs = performance.now() - started;
          await sleep(100);
        }
      })();
      const answers = await Promise.all(urls.map((url) => get(`${gatewayUrl}/v1/update?url=${encodeURIComponent(url)}`, token)));
      const statuses = answers.map((r) => r.status);
      const refusal = answers.find((r) => r.status !== 200);
      if (refusal) process.stdout.write(`dispatch ${concurrent} concurrent: ${answers.filter((r) => r.status !== 200).length} failed, e.g. ${refusal.status} ${refusal.body.slice(0, 300)}\n`);
      const ms = performance.now() - started;
      sampling = false;
      await sampler;
      if (Number.isNaN(dispatchedMs)) dispatchedMs = ms;
      const cpuAfter = await metric(gatewayUrl, 'process_cpu_seconds_total');
      const runsPerLocation = concurrent * 2 * RUNS;
      const waves = Math.ceil(runsPerLocation / (RESPONDERS_PER_LOCATION * CAPACITY));
      const idealMs = waves * DELAY_MS;
      const level = { concurrent, replies, ms, dispatchedMs, idealMs, overIdeal: ms / idealMs, dispatchedOverIdeal: dispatchedMs / idealMs, cpuMsPerUpdate: ((cpuAfter - cpuBefore) * 1000) / concurrent, peakRssMb: peakRss / 2 ** 20, failed: statuses.filter((s) => s !== 200).length };
      process.stdout.write(`dispatch ${concurrent} concurrent, ${replies} replies: all runs answered in ${Math.round(dispatchedMs)} ms (×${level.dispatchedOverIdeal.toFixed(2)} ideal), updates stored and answered in ${Math.round(ms)} ms (ideal ${idealMs} ms, ×${level.overIdeal.toFixed(2)}), ${level.cpuMsPerUpdate.toFixed(1)} ms CPU/update, peak RSS ${level.peakRssMb.toFixed(0)} MB, ${level.failed} failed\n`);
      figures.push(level);
    }
    return figures;
  } finally {
    gateway.kill('SIGTERM');
    for (const agent of agents) await agent.stop();
    await nc.drain();
    await store.close();
    await db.stop();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await measureDispatchScale((process.argv[2] ?? '1,10,100').split(',').map(Number));
}

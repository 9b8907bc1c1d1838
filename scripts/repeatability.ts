/**
 * How repeatable is the performance score? Runs 10 updates of the fixture page with one run
 * and 10 with three runs (the median run kept), interleaved, through a real gateway, NATS and a
 * warm agent, and prints the spread of the stored performance score and LCP for each.
 *   node scripts/repeatability.ts [updates=10]   (writes bench/repeatability.md)
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { auditResultSchema } from '@perfwatch/common';
import { chromeFlags, createLighthouseRunner, createTargetGuard, parseAllowList, startAgent, startGuardProxy } from '@perfwatch/agent';
import { createAdmin, MongoStore, startDemoSite, startFerretDb, startGateway, startNatsServer } from '@perfwatch/gateway';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tools = join(root, '.tools/bin');
const updates = Number(process.argv[2] ?? 10);
const logger = pino({ level: 'silent' });

const dir = await mkdtemp(join(tmpdir(), 'perfwatch-repeat-'));
const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
const db = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
const site = await startDemoSite({ root: join(root, 'test/fixtures/site') });
const store = new MongoStore({ uri: db.url, dbName: 'repeat' });
await store.init();
const nc = await connect({ servers: nats.url });
const guard = createTargetGuard({ allow: parseAllowList('127.0.0.0/8') });
const proxy = await startGuardProxy({ guard, logger });
const runner = createLighthouseRunner({ chromePath: process.env['CHROME_PATH'] ?? '/usr/bin/chromium', chromeFlags: chromeFlags({ noSandbox: process.getuid?.() === 0 }), logger, guard: { guard, proxy } });
const agent = startAgent({ nc, location: 'london', runner, logger, agentId: 'repeat' });
const gateway = await startGateway({ nc, store, logger, config: { PORT: 0, HOST: '127.0.0.1', RUN_TIMEOUT_MS: 120_000, SYNC_UPDATE_TIMEOUT_MS: 600_000, BODY_LIMIT: '100kb' } });
const admin = createAdmin(store);
const { token } = await admin.createUser('repeat');
const one = `${site.url}index.html?runs=1`;
const three = `${site.url}index.html?runs=3`;
await admin.addProject('repeat', one, { locations: ['london'], runs: 1 });
await admin.addProject('repeat', three, { locations: ['london'], runs: 3 });

const samples = { one: [] as Array<{ score: number; lcp: number }>, three: [] as Array<{ score: number; lcp: number }> };
try {
  for (let i = 0; i < updates; i++) {
    for (const [name, url] of i % 2 ? ([['three', three], ['one', one]] as const) : ([['one', one], ['three', three]] as const)) {
      const res = await fetch(`${gateway.http.url}/v1/update?url=${encodeURIComponent(url)}&device=mobile`, { headers: { Authorization: token } });
      const cell = auditResultSchema.parse(await res.json()).mobile!.london!;
      const kept = cell.runs[cell.median - 1]!;
      samples[name].push({ score: kept.performance!, lcp: kept.lcp! });
      process.stderr.write(`update ${i + 1}/${updates} ${name}: score ${kept.performance}, LCP ${Math.round(kept.lcp!)} ms\n`);
    }
  }
} finally {
  await gateway.stop();
  await agent.stop();
  await nc.drain();
  await runner.close();
  await proxy.close();
  await store.close();
  await site.close();
  await db.stop();
  await nats.stop();
  await rm(dir, { recursive: true, force: true });
}

const stats = (xs: number[]) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1));
  return { mean, sd, min: Math.min(...xs), max: Math.max(...xs) };
};
const row = (name: string, xs: Array<{ score: number; lcp: number }>) => {
  const s = stats(xs.map((x) => x.score));
  const l = stats(xs.map((x) => x.lcp));
  return `| ${name} | ${xs.length} | ${s.mean.toFixed(1)} | ${s.sd.toFixed(2)} | ${s.min}–${s.max} | ${l.mean.toFixed(0)} ms | ${l.sd.toFixed(0)} ms |`;
};
const text = [
  '# Repeatability of the performance score (fixture page, mobile, one warm agent)',
  '',
  `- date: ${new Date().toISOString()}; machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; ${updates} updates each, interleaved`,
  '',
  '| runs per update | updates | score mean | score SD | score range | LCP mean | LCP SD |',
  '|---|---|---|---|---|---|---|',
  row('1 run', samples.one),
  row('median of 3', samples.three),
  '',
];
await writeFile(join(root, 'bench/repeatability.md'), text.join('\n'));
process.stdout.write(text.join('\n'));

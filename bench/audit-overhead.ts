/**
 * What a perfwatch sync update costs on top of Lighthouse. Alternates, on the same fixture
 * page: a bare `lighthouse` CLI run, and a sync update (1 device, 1 location, 1 run) through
 * the HTTP API, a real nats-server, an agent running Lighthouse in its process and a real
 * MongoDB-wire server. Prints the median of each ratio; machines here are shared and noisy,
 * so only ratios measured side by side mean anything.
 *   node bench/audit-overhead.ts [pairs=5]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { chromeFlags, createLighthouseRunner, startAgent, type AuditRunner } from '@perfwatch/agent';
import { createAdmin, MongoStore, startDemoSite, startFerretDb, startGateway, startNatsServer } from '@perfwatch/gateway';

const exec = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tools = join(root, '.tools/bin');
const chromePath = process.env['CHROME_PATH'] ?? '/usr/bin/chromium';
const pairs = Number(process.argv[2] ?? 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface OverheadFigures {
  pairs: number;
  cliMs: number[];
  updateMs: number[];
  agentLighthouseMs: number[];
  updateOverCli: number;
  updateOverAgentLighthouse: number;
}

export async function measureAuditOverhead(n = pairs): Promise<OverheadFigures> {
  const logger = pino({ level: 'silent' });
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-bench-'));
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const db = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const site = await startDemoSite({ root: join(root, 'test/fixtures/site') });
  const store = new MongoStore({ uri: db.url, dbName: 'bench' });
  await store.init();
  const nc = await connect({ servers: nats.url });
  const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });
  const lighthouseRunner = createLighthouseRunner({ chromePath, chromeFlags: flags, logger });
  const agentLighthouseMs: number[] = [];
  const timed: AuditRunner = {
    run: async (request) => {
      const output = await lighthouseRunner.run(request);
      agentLighthouseMs.push(output.lighthouseMs);
      return output;
    },
    close: () => lighthouseRunner.close(),
  };
  const agent = startAgent({ nc, location: 'london', runner: timed, logger, agentId: 'bench' });
  const gateway = await startGateway({ nc, store, logger, config: { PORT: 0, HOST: '127.0.0.1', RUN_TIMEOUT_MS: 120_000, SYNC_UPDATE_TIMEOUT_MS: 600_000, BODY_LIMIT: '100kb' } });
  const admin = createAdmin(store);
  const { token } = await admin.createUser('bench');
  const page = `${site.url}index.html`;
  await admin.addProject('bench', page, { locations: ['london'], runs: 1 });

  const cliMs: number[] = [];
  const updateMs: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      let started = performance.now();
      await exec(join(root, 'node_modules/.bin/lighthouse'), [page, '--quiet', '--output=json', `--output-path=${join(dir, 'cli.json')}`, `--chrome-flags=${flags.join(' ')}`], {
        env: { ...process.env, CHROME_PATH: chromePath },
        maxBuffer: 64 * 1024 * 1024,
      });
      cliMs.push(performance.now() - started);

      started = performance.now();
      const res = await fetch(`${gateway.http.url}/v1/update?url=${encodeURIComponent(page)}&device=mobile`, { headers: { Authorization: token } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`update answered ${res.status}`);
      updateMs.push(performance.now() - started);
      process.stderr.write(`pair ${i + 1}/${n}: cli ${Math.round(cliMs[i]!)} ms, update ${Math.round(updateMs[i]!)} ms (agent's Lighthouse ${Math.round(agentLighthouseMs[i]!)} ms)\n`);
    }
  } finally {
    await gateway.stop();
    await agent.stop();
    await nc.drain();
    await lighthouseRunner.close();
    await store.close();
    await site.close();
    await db.stop();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return {
    pairs: n,
    cliMs,
    updateMs,
    agentLighthouseMs,
    updateOverCli: median(updateMs.map((u, i) => u / cliMs[i]!)),
    updateOverAgentLighthouse: median(updateMs.map((u, i) => u / agentLighthouseMs[i]!)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureAuditOverhead();
  console.log(JSON.stringify({ ...figures, cliMedianMs: median(figures.cliMs), updateMedianMs: median(figures.updateMs), agentLighthouseMedianMs: median(figures.agentLighthouseMs) }, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 1000) / 1000 : v), 2));
}

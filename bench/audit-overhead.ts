/**
 * What a perfwatch sync update costs on top of Lighthouse. Alternates, on the same fixture
 * page: a bare `lighthouse` CLI run, a sync update (1 device, 1 location, 1 run) served by a
 * cold agent (a Chrome launched per run) and one served by a warm agent (Chrome kept between
 * runs), each through the HTTP API, a real nats-server, an agent running Lighthouse in its
 * process and a real MongoDB-wire server. Prints the median of each ratio; machines here are
 * shared and noisy, so only ratios measured side by side mean anything.
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
import { chromeFlags, createLighthouseRunner, createTargetGuard, parseAllowList, startAgent, startGuardProxy, type AuditRunner } from '@perfwatch/agent';
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
  cold: PathFigures;
  warm: PathFigures;
}

export interface PathFigures {
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
  // As in production, Chrome reaches the page through the agent's target-guard proxy.
  const guard = createTargetGuard({ allow: parseAllowList('127.0.0.0/8') });
  const proxy = await startGuardProxy({ guard, logger });
  // Cold: a Chrome per run, serving london. Warm: Chrome kept between runs, serving tokyo.
  const paths = {
    cold: { location: 'london' as const, runner: createLighthouseRunner({ chromePath, chromeFlags: flags, logger, runsPerBrowser: 0, guard: { guard, proxy } }), lighthouseMs: [] as number[], updateMs: [] as number[] },
    warm: { location: 'tokyo' as const, runner: createLighthouseRunner({ chromePath, chromeFlags: flags, logger, runsPerBrowser: 1000, guard: { guard, proxy } }), lighthouseMs: [] as number[], updateMs: [] as number[] },
  };
  const agents = Object.values(paths).map((path) => {
    const timed: AuditRunner = {
      run: async (request) => {
        const output = await path.runner.run(request);
        path.lighthouseMs.push(output.lighthouseMs);
        return output;
      },
      close: () => path.runner.close(),
    };
    return startAgent({ nc, location: path.location, runner: timed, logger, agentId: `bench-${path.location}` });
  });
  const gateway = await startGateway({ nc, store, logger, config: { PORT: 0, HOST: '127.0.0.1', RUN_TIMEOUT_MS: 120_000, SYNC_UPDATE_TIMEOUT_MS: 600_000, BODY_LIMIT: '100kb' } });
  const admin = createAdmin(store);
  const { token } = await admin.createUser('bench');
  const coldPage = `${site.url}index.html`;
  const warmPage = `${site.url}index.html?warm`;
  await admin.addProject('bench', coldPage, { locations: ['london'], runs: 1 });
  await admin.addProject('bench', warmPage, { locations: ['tokyo'], runs: 1 });
  const update = async (page: string) => {
    const started = performance.now();
    const res = await fetch(`${gateway.http.url}/v1/update?url=${encodeURIComponent(page)}&device=mobile`, { headers: { Authorization: token } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`update answered ${res.status}`);
    return performance.now() - started;
  };
  // Lighthouse's import and the warm agent's first Chrome are paid once, before measuring.
  await update(warmPage);
  paths.warm.lighthouseMs.length = 0;

  const cliMs: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await exec(join(root, 'node_modules/.bin/lighthouse'), [coldPage, '--quiet', '--output=json', `--output-path=${join(dir, 'cli.json')}`, `--chrome-flags=${flags.join(' ')}`], {
        env: { ...process.env, CHROME_PATH: chromePath },
        maxBuffer: 64 * 1024 * 1024,
      });
      cliMs.push(performance.now() - started);
      // Alternate which agent goes first, so neither always follows the CLI's run.
      for (const name of i % 2 ? (['warm', 'cold'] as const) : (['cold', 'warm'] as const)) {
        paths[name].updateMs.push(await update(name === 'cold' ? coldPage : warmPage));
      }
      process.stderr.write(
        `pair ${i + 1}/${n}: cli ${Math.round(cliMs[i]!)} ms, cold update ${Math.round(paths.cold.updateMs[i]!)} ms (Lighthouse ${Math.round(paths.cold.lighthouseMs[i]!)} ms), warm update ${Math.round(paths.warm.updateMs[i]!)} ms (Lighthouse ${Math.round(paths.warm.lighthouseMs[i]!)} ms)\n`,
      );
    }
  } finally {
    await gateway.stop();
    for (const agent of agents) await agent.stop();
    await nc.drain();
    for (const path of Object.values(paths)) await path.runner.close();
    await proxy.close();
    await store.close();
    await site.close();
    await db.stop();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const figures = (path: { updateMs: number[]; lighthouseMs: number[] }): PathFigures => ({
    updateMs: path.updateMs,
    agentLighthouseMs: path.lighthouseMs,
    updateOverCli: median(path.updateMs.map((u, i) => u / cliMs[i]!)),
    updateOverAgentLighthouse: median(path.updateMs.map((u, i) => u / path.lighthouseMs[i]!)),
  });
  return { pairs: n, cliMs, cold: figures(paths.cold), warm: figures(paths.warm) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureAuditOverhead();
  console.log(JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 1000) / 1000 : v), 2));
}

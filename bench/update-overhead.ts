/**
 * What a perfwatch sync update costs on top of Lighthouse. Alternates, on the same fixture
 * page: a bare `lighthouse` CLI run, a sync update (1 device, 1 location, 1 run) served by a
 * cold agent (a Chrome launched per run) and one served by a warm agent (Chrome kept between
 * runs), each through the HTTP API, a real nats-server, an agent running Lighthouse in its
 * process and a real MongoDB-wire server. Prints the median of each ratio; machines here are
 * shared and noisy, so only ratios measured side by side mean anything.
 *   node bench/update-overhead.ts [pairs=5]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromeFlags } from '@perfwatch/agent';
import { root, startLocalStack } from './local-stack.ts';

const exec = promisify(execFile);
const chromePath = process.env['CHROME_PATH'] ?? '/usr/bin/chromium';
const pairs = Number(process.argv[2] ?? 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface OverheadFigures {
  pairs: number;
  cliMs: number[];
  cold: PathFigures;
  warm: PathFigures;
}

interface PathFigures {
  updateMs: number[];
  agentLighthouseMs: number[];
  updateOverCli: number;
  updateOverAgentLighthouse: number;
}

export async function measureUpdateOverhead(n = pairs): Promise<OverheadFigures> {
  const lighthouseMs = { cold: [] as number[], warm: [] as number[] };
  const updateMs = { cold: [] as number[], warm: [] as number[] };
  // Cold: a Chrome per run, serving london. Warm: Chrome kept between runs, serving tokyo.
  const stack = await startLocalStack([
    { location: 'london', runsPerBrowser: 0, onRun: (o) => lighthouseMs.cold.push(o.lighthouseMs) },
    { location: 'tokyo', runsPerBrowser: 1000, onRun: (o) => lighthouseMs.warm.push(o.lighthouseMs) },
  ]);
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-cli-'));
  const pages = { cold: `${stack.siteUrl}index.html`, warm: `${stack.siteUrl}index.html?warm` };
  await stack.admin.addProject('stack', pages.cold, { locations: ['london'], runs: 1 });
  await stack.admin.addProject('stack', pages.warm, { locations: ['tokyo'], runs: 1 });
  const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });
  const cliMs: number[] = [];
  try {
    // Lighthouse's import and the warm agent's first Chrome are paid once, before measuring.
    await stack.update(pages.warm);
    lighthouseMs.warm.length = 0;
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await exec(
        join(root, 'node_modules/.bin/lighthouse'),
        [
          pages.cold,
          '--quiet',
          '--output=json',
          `--output-path=${join(dir, 'cli.json')}`,
          `--chrome-flags=${flags.join(' ')}`,
        ],
        {
          env: { ...process.env, CHROME_PATH: chromePath },
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      cliMs.push(performance.now() - started);
      // Alternate which agent goes first, so neither always follows the CLI's run.
      for (const name of i % 2 ? (['warm', 'cold'] as const) : (['cold', 'warm'] as const))
        updateMs[name].push((await stack.update(pages[name])).ms);
      process.stderr.write(
        `pair ${i + 1}/${n}: cli ${Math.round(cliMs[i]!)} ms, cold update ${Math.round(updateMs.cold[i]!)} ms (Lighthouse ${Math.round(lighthouseMs.cold[i]!)} ms), warm update ${Math.round(updateMs.warm[i]!)} ms (Lighthouse ${Math.round(lighthouseMs.warm[i]!)} ms)\n`,
      );
    }
  } finally {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  }
  const figures = (name: 'cold' | 'warm'): PathFigures => ({
    updateMs: updateMs[name],
    agentLighthouseMs: lighthouseMs[name],
    updateOverCli: median(updateMs[name].map((u, i) => u / cliMs[i]!)),
    updateOverAgentLighthouse: median(updateMs[name].map((u, i) => u / lighthouseMs[name][i]!)),
  });
  return { pairs: n, cliMs, cold: figures('cold'), warm: figures('warm') };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureUpdateOverhead();
  console.log(
    JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 1000) / 1000 : v), 2),
  );
}

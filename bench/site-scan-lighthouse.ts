/**
 * The reference: the stock `lighthouse` CLI on each page, one run, one page at a time, in a
 * process of its own, with the settings perfwatch's agent uses on desktop (Lighthouse's desktop
 * config: `--preset=desktop`) and the agent's Chrome flags on the same Chromium.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { chromeFlags } from '@perfwatch/agent';
import { median } from '@perfwatch/common';
import { root } from './local-stack.ts';
import type { ToolScan } from './site-scan-pages.ts';

const exec = promisify(execFile);

const lhrSchema = z.object({
  categories: z.object({ performance: z.object({ score: z.number() }) }),
  audits: z.object({ 'largest-contentful-paint': z.object({ numericValue: z.number() }) }),
  environment: z.object({ benchmarkIndex: z.number() }),
});

/** One stock run of `origin + path`: its score and LCP, read from the report it wrote. */
async function stockRun(url: string, report: string, chromePath: string) {
  const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });
  await exec(
    join(root, 'node_modules/.bin/lighthouse'),
    [
      url,
      '--preset=desktop',
      '--quiet',
      '--output=json',
      `--output-path=${report}`,
      `--chrome-flags=${flags.join(' ')}`,
    ],
    { env: { ...process.env, CHROME_PATH: chromePath }, maxBuffer: 64 * 1024 * 1024 },
  );
  const lhr = lhrSchema.parse(JSON.parse(await readFile(report, 'utf8')));
  return {
    score: Math.round(lhr.categories.performance.score * 100),
    lcpMs: lhr.audits['largest-contentful-paint'].numericValue,
    benchmarkIndex: lhr.environment.benchmarkIndex,
  };
}

/** Every page, one after the other; with the median of Lighthouse's benchmark index over the runs. */
export async function scanWithStockLighthouse(origin: string, paths: readonly string[], chromePath: string) {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-site-scan-cli-'));
  const scan: ToolScan = { tool: 'stock lighthouse', parallelism: 1, wallMs: 0, pages: new Map(), loadAvg: 0 };
  const benchmarkIndexes: number[] = [];
  const started = performance.now();
  try {
    for (const path of paths) {
      const { benchmarkIndex, ...value } = await stockRun(`${origin}${path}`, join(dir, 'report.json'), chromePath);
      scan.pages.set(path, value);
      benchmarkIndexes.push(benchmarkIndex);
      process.stderr.write(`stock lighthouse ${scan.pages.size}/${paths.length} ${path}\n`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  scan.wallMs = performance.now() - started;
  scan.loadAvg = loadavg()[0]!;
  return { scan, benchmarkIndex: median(benchmarkIndexes) };
}

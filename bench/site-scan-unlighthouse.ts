/**
 * Unlighthouse (`@unlighthouse/cli`, pinned in scripts/setup.sh, which `npm run bench` runs: it
 * installs it into .tools/unlighthouse, a tree of its own) scanning the same pages:
 * `unlighthouse-ci` with a config file of our own, on the same Chromium, desktop, one sample a
 * page, `maxConcurrency` pages at once (puppeteer-cluster's workers, a browser each), its
 * throttling pinned to Lighthouse's desktop preset as perfwatch's agent and the stock CLI run
 * (Unlighthouse's own default simulates a 150 ms, 1.6 Mbit/s network). The list of pages is
 * given (`urls`), which turns off its robots.txt, sitemap, crawler and sampling.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { z } from 'zod';
import type { ToolScan } from './site-scan-pages.ts';

const exec = promisify(execFile);

/** Where scripts/setup.sh (bench) installs the pinned Unlighthouse: not among the project's own packages. */
const UNLIGHTHOUSE_CI = join(
  dirname(fileURLToPath(import.meta.url)),
  '../.tools/unlighthouse/node_modules',
  '@unlighthouse/cli/dist/ci.mjs',
);

/** Lighthouse 13's desktop preset (core/config/constants.js, desktopDense4G), as `--preset=desktop`. */
const DESKTOP_THROTTLING = {
  rttMs: 40,
  throughputKbps: 10 * 1024,
  cpuSlowdownMultiplier: 1,
  requestLatencyMs: 0,
  downloadThroughputKbps: 0,
  uploadThroughputKbps: 0,
};

const ciResultSchema = z.object({
  routes: z.array(
    z.object({
      path: z.string(),
      categories: z.object({ performance: z.object({ score: z.number() }) }),
      metrics: z.object({ 'largest-contentful-paint': z.object({ numericValue: z.number() }) }),
    }),
  ),
});

function config(origin: string, paths: readonly string[], parallelism: number, chromePath: string, out: string) {
  return {
    site: origin,
    urls: paths,
    outputPath: out,
    cache: false,
    chrome: { useSystem: true, useDownloadFallback: false },
    puppeteerOptions: { executablePath: chromePath, args: ['--no-sandbox', '--headless=new'] },
    puppeteerClusterOptions: { maxConcurrency: parallelism, monitor: false },
    scanner: { device: 'desktop', samples: 1, maxRoutes: paths.length + 1, sitemap: false, crawler: false },
    lighthouseOptions: { throttlingMethod: 'simulate', throttling: DESKTOP_THROTTLING },
    ci: { reporter: 'jsonExpanded' },
  };
}

export async function scanWithUnlighthouse(
  origin: string,
  paths: readonly string[],
  parallelism: number,
  chromePath: string,
): Promise<ToolScan> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-site-scan-ul-'));
  const out = join(dir, 'out');
  const file = join(dir, 'unlighthouse.config.mjs');
  await writeFile(
    file,
    `export default ${JSON.stringify(config(origin, paths, parallelism, chromePath, out), null, 2)};\n`,
  );
  try {
    const started = performance.now();
    // What the package's `unlighthouse-ci` binary imports, run by this Node.
    await exec(process.execPath, [UNLIGHTHOUSE_CI, '--config-file', file], {
      cwd: dir,
      // Its browsers' profiles under `dir`, so those it leaves running are found and ended below.
      env: { ...process.env, CHROME_PATH: chromePath, PUPPETEER_SKIP_DOWNLOAD: '1', CI: '1', TMPDIR: dir },
      maxBuffer: 64 * 1024 * 1024,
    });
    const wallMs = performance.now() - started;
    const result = ciResultSchema.parse(JSON.parse(await readFile(join(out, 'ci-result.json'), 'utf8')));
    const pages = new Map(
      result.routes.map((route) => [
        route.path,
        {
          score: Math.round(route.categories.performance.score * 100),
          lcpMs: route.metrics['largest-contentful-paint'].numericValue,
        },
      ]),
    );
    return { tool: 'Unlighthouse', parallelism, wallMs, pages, loadAvg: loadavg()[0]! };
  } finally {
    await endBrowsersUnder(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * unlighthouse-ci exits without closing every browser puppeteer-cluster launched (each in a
 * process group of its own): the Chromes whose command line names `dir` are ended, by pid.
 */
async function endBrowsersUnder(dir: string): Promise<void> {
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!command.includes(dir)) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

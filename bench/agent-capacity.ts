/**
 * What one agent machine does: runs per hour per core, and Chrome's memory per run, with a
 * warm browser (one Chrome kept across runs) and a cold one (a Chrome launched per run). The
 * runner is the agent's own (a worker-thread pool, Chrome behind the target guard), run at a
 * capacity of one runner per core on the fixture page, mobile; warm and cold phases alternate.
 * Chrome's memory is the proportional set size (PSS, shared pages split between the processes
 * sharing them) summed over a browser's processes, sampled every 200 ms; its peak per browser.
 *   node bench/agent-capacity.ts [runsPerPhase=6]
 */
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { pino } from 'pino';
import { benchRunnerPool } from './local-stack.ts';
import { startDemoSite } from '@perfwatch/local';
import { chromesOf } from '../test/support/chrome-processes.ts';

export interface CapacityPhase {
  runs: number;
  seconds: number;
  runsPerHourPerCore: number;
  medianLighthouseMs: number;
  /** Peak PSS of each browser's processes, MB; median over the browsers used. */
  chromePeakMb: number;
  browsers: number;
}

export interface CapacityFigures {
  cores: number;
  warm: CapacityPhase;
  cold: CapacityPhase;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function pssKb(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  return Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0);
}

async function phase(url: string, runs: number, runsPerBrowser: number, cores: number): Promise<CapacityPhase> {
  const logger = pino({ level: 'silent' });
  const pool = benchRunnerPool(cores, runsPerBrowser, logger);
  const peaks = new Map<string, number>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const chrome of await chromesOf(process.pid)) {
        let kb = 0;
        for (const pid of chrome.pids) kb += await pssKb(pid);
        peaks.set(chrome.dir, Math.max(peaks.get(chrome.dir) ?? 0, kb));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  const lighthouseMs: number[] = [];
  let next = 0;
  const started = performance.now();
  try {
    await Promise.all(
      Array.from({ length: cores }, async () => {
        while (next < runs) {
          next++;
          const output = await pool.run({ url, device: 'mobile', timeoutMs: 120_000 });
          lighthouseMs.push(output.lighthouseMs);
        }
      }),
    );
  } finally {
    sampling = false;
    await sampler;
    await pool.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const browserPeaks = [...peaks.values()].filter((kb) => kb > 0);
  return {
    runs,
    seconds,
    runsPerHourPerCore: ((runs / seconds) * 3600) / cores,
    medianLighthouseMs: median(lighthouseMs),
    chromePeakMb: median(browserPeaks) / 1024,
    browsers: browserPeaks.length,
  };
}

export async function measureAgentCapacity(runsPerPhase = 6): Promise<CapacityFigures> {
  const cores = cpus().length;
  const site = await startDemoSite();
  try {
    const url = `${site.url}index.html`;
    // A short warm-up so neither phase pays for first imports and disk caches.
    await phase(url, 1, 0, 1);
    const warm = await phase(url, runsPerPhase, 1_000, cores);
    const cold = await phase(url, runsPerPhase, 0, cores);
    process.stdout.write(
      `agent capacity: warm ${warm.runsPerHourPerCore.toFixed(0)} runs/h/core (Chrome ${warm.chromePeakMb.toFixed(0)} MB), cold ${cold.runsPerHourPerCore.toFixed(0)} runs/h/core (Chrome ${cold.chromePeakMb.toFixed(0)} MB)\n`,
    );
    return { cores, warm, cold };
  } finally {
    await site.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await measureAgentCapacity(Number(process.argv[2] ?? 6)), null, 2));
}

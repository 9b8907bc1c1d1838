/**
 * Whether run verdicts hold on this machine: the share of lone runs judged reliable on an idle
 * host, and the share judged suspect while a competing load takes one core, each in two set-ups
 * measured side by side in one run: `perfwatch start` (gateway and agent in one process, the
 * embedded store, as `npm start` runs it) and a gateway with agents of two locations on one host
 * (one busy at a time), over a real nats-server and FerretDB. Every update is a sync update of
 * one run of the demo page, mobile; the first-round run's verdict is what counts (re-tests are
 * the verdicts' consequence, not their evidence).
 *   node bench/verdicts.ts [runs=30]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { auditResultSchema, type RunSummary } from '@perfwatch/common';
import { freePort } from '../test/support/local-servers.ts';
import { spawnServer, startLocalStack } from './local-stack.ts';

interface VerdictTally {
  setup: 'perfwatch start' | 'two agents, two locations';
  load: 'idle' | 'one core taken';
  runs: number;
  reliable: number;
  /** The first-round runs' benchmark indexes and the baseline each was judged against. */
  indexes: Array<{ run: number | null; baseline: number | null; otherCpuShare: number | null }>;
  reasons: Map<string, number>;
  /** Sync update wall times, ms. */
  updateMs: number[];
}

export interface VerdictFigures {
  tallies: VerdictTally[];
}

type Update = (url: string) => Promise<unknown>;

/** The first-round run of a one-run, one-location update. */
function firstRun(body: unknown): RunSummary {
  const result = auditResultSchema.parse(body);
  const cell = Object.values(result.mobile ?? {})[0];
  if (!cell) throw new Error('the update answered no mobile cell');
  return cell.runs.find((run) => run.retestOf === undefined)!;
}

async function tally(
  setup: VerdictTally['setup'],
  load: VerdictTally['load'],
  runs: number,
  pages: string[],
  update: Update,
): Promise<VerdictTally> {
  const figures: VerdictTally = { setup, load, runs, reliable: 0, indexes: [], reasons: new Map(), updateMs: [] };
  const stress = load === 'one core taken' ? startCompetingLoad() : null;
  try {
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      const run = firstRun(await update(pages[i % pages.length]!));
      figures.updateMs.push(performance.now() - started);
      if (run.verdict === 'reliable') figures.reliable++;
      figures.indexes.push({
        run: run.benchmarkIndex ?? null,
        baseline: run.baselineBenchmarkIndex ?? null,
        otherCpuShare: run.otherCpuShare ?? null,
      });
      for (const reason of run.reasons ?? []) {
        const kind = reason.replace(/\d[\d,.]*/g, 'N');
        figures.reasons.set(kind, (figures.reasons.get(kind) ?? 0) + 1);
      }
      process.stderr.write(
        `${setup}, ${load}: run ${i + 1}/${runs} ${run.verdict} (index ${run.benchmarkIndex}/${run.baselineBenchmarkIndex}, others ${run.otherCpuShare})${run.reasons?.length ? ` ${run.reasons.join('; ')}` : ''}\n`,
      );
    }
  } finally {
    await stress?.stop();
  }
  return figures;
}

/** Debian's stress-ng spinning on one core (scripts/setup.sh bench installs it). */
function startCompetingLoad(): { stop(): Promise<void> } {
  const child: ChildProcess = spawn('stress-ng', ['--cpu', '1', '--cpu-method', 'matrixprod', '--quiet'], {
    stdio: 'ignore',
  });
  return {
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `perfwatch start` in a process of its own, on free ports and a data directory of its own; its printed token read back. */
async function startPerfwatchStart(): Promise<{ update: Update; page: string; stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-verdicts-'));
  const demoPort = await freePort();
  const server = await spawnServer(
    'start',
    { PERFWATCH_DEMO_PORT: String(demoPort), PERFWATCH_DATA_DIR: dir },
    { stdio: ['ignore', 'pipe', 'inherit'], readyTries: 600 },
  );
  // The banner, token included, is printed once the server is up; the pipe kept it.
  let out = '';
  server.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  let token: string | undefined;
  for (let i = 0; i < 100 && !token; i++) {
    token = /token for user "demo"[^:]*: (pw_\S+)/.exec(out)?.[1];
    await sleep(100);
  }
  if (!token) throw new Error(`perfwatch start printed no token: ${out}`);
  return {
    page: `http://127.0.0.1:${demoPort}/`,
    update: async (url) => {
      const res = await fetch(`${server.url}/v1/update?url=${encodeURIComponent(url)}&device=mobile`, {
        headers: { Authorization: token },
      });
      const body: unknown = await res.json();
      if (res.status !== 200) throw new Error(`update answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      return body;
    },
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function measureVerdicts(runs = 30): Promise<VerdictFigures> {
  const tallies: VerdictTally[] = [];
  const start = await startPerfwatchStart();
  try {
    // The first update pays for Lighthouse's import and the first calibration.
    await start.update(start.page);
    tallies.push(await tally('perfwatch start', 'idle', runs, [start.page], start.update));
    tallies.push(await tally('perfwatch start', 'one core taken', runs, [start.page], start.update));
  } finally {
    await start.stop();
  }
  const stack = await startLocalStack([
    { location: 'london', runsPerBrowser: 10 },
    { location: 'tokyo', runsPerBrowser: 10 },
  ]);
  try {
    const pages = [`${stack.siteUrl}index.html?london`, `${stack.siteUrl}index.html?tokyo`];
    await stack.admin.addProject('stack', pages[0]!, { locations: ['london'], runs: 1 });
    await stack.admin.addProject('stack', pages[1]!, { locations: ['tokyo'], runs: 1 });
    const update: Update = async (url) => (await stack.update(url)).body;
    for (const page of pages) await update(page);
    tallies.push(await tally('two agents, two locations', 'idle', runs, pages, update));
    tallies.push(await tally('two agents, two locations', 'one core taken', runs, pages, update));
  } finally {
    await stack.close();
  }
  return { tallies };
}

const percent = (n: number, of: number) => `${Math.round((n / of) * 100)} %`;
const middle = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export function verdictsSection({ tallies }: VerdictFigures): string[] {
  const baselines = tallies.flatMap((t) => t.indexes.flatMap((i) => (i.baseline === null ? [] : [i.baseline])));
  return [
    `## Run verdicts (demo page, mobile, one run per sync update, ${tallies[0]?.runs ?? 0} updates per row; goal: idle ≥ 95 % reliable, one core taken ≥ 90 % suspect)`,
    '',
    `Machine: ${cpus().length} cores; the agents' baselines (benchmark index) ${Math.min(...baselines)}–${Math.max(...baselines)}.`,
    '',
    "| set-up | host | reliable | suspect | runs' index, median (range) | others' CPU share, median (range) | sync update, median | reasons for doubt |",
    '|---|---|---|---|---|---|---|---|',
    ...tallies.map((t) => {
      const indexes = t.indexes.flatMap((i) => (i.run === null ? [] : [i.run]));
      const shares = t.indexes.flatMap((i) => (i.otherCpuShare === null ? [] : [i.otherCpuShare]));
      const reasons = [...t.reasons].map(([kind, n]) => `${n} × ${kind}`).join('; ') || '—';
      return `| ${t.setup} | ${t.load} | ${percent(t.reliable, t.runs)} | ${percent(t.runs - t.reliable, t.runs)} | ${middle(indexes)} (${Math.min(...indexes)}–${Math.max(...indexes)}) | ${middle(shares)} (${Math.min(...shares)}–${Math.max(...shares)}) | ${Math.round(middle(t.updateMs))} ms | ${reasons} |`;
    }),
    '',
    "A competing load is Debian's `stress-ng --cpu 1` (one core spinning) for the whole row. The baseline is the median of the agent's readings, each taken as Lighthouse takes a run's own (one evaluation of its benchmark in a fresh tab), at idle calibrations and by lone runs; the others' CPU share is the host's busy time less the run's own (its Chrome's processes and Lighthouse's thread) over the host's CPU time while the run lasted.",
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(verdictsSection(await measureVerdicts(Number(process.argv[2] ?? 30))).join('\n'));
}

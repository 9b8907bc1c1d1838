/**
 * How far can one perfwatch number be trusted? Through a real gateway, nats-server, MongoDB-wire
 * server and one calibrated agent running real Lighthouse (bench/local-stack.ts):
 * - repeatability: `updates` sync updates of the fixture page (mobile) and of the heavy page
 *   (desktop) with 1 run, 3 runs and 5 runs (the stored median run's score and LCP kept),
 *   interleaved, on an agent with room for 1 run at a time and on one with room for 2; the SD
 *   of the score and the coefficient of variation of LCP over the updates;
 * - agreement with stock Lighthouse: `updates` alternating rounds of a stock `lighthouse` CLI
 *   run and a 1-run perfwatch update of the same page, medians compared.
 * Devices: the fixture page scores 100 on desktop every time, which says nothing of spread, so
 * it is measured on mobile, where the agent's calibrated CPU slowdown applies (the CLI side is
 * then told the same `cpuSlowdownMultiplier`: its fixed 4× differs by design); the heavy page
 * on desktop, where the CLI's desktop preset and perfwatch slow nothing, so the two sides are
 * stock against stock (and a mobile run of a page with a 1 s long task takes ~20 s).
 * Verdict re-tests (MAX_RETESTS, 2) are on, as shipped.
 *   node bench/repeatability.ts [updates=10]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromeFlags } from '@perfwatch/agent';
import { auditResultSchema, median } from '@perfwatch/common';
import { root, startLocalStack, type LocalStack } from './local-stack.ts';

const exec = promisify(execFile);
const PAGES = [
  { page: 'fixture page', file: 'index.html', device: 'mobile' },
  { page: 'heavy page', file: 'heavy.html', device: 'desktop' },
] as const;
type Device = (typeof PAGES)[number]['device'];
const RUNS = [1, 3, 5] as const;
const GOALS = { medianOf5ScoreSd: 1, medianOf5LcpCv: 0.03, cliMedianDifference: 2 };

interface Spread {
  page: string;
  device: Device;
  capacity: number;
  runs: number;
  updates: number;
  scoreMean: number;
  scoreSd: number;
  lcpMeanMs: number;
  lcpCv: number;
  /** Runs the gateway made over the updates, re-tests included, and how many were suspect. */
  runsMade: number;
  suspectRuns: number;
  medianUpdateMs: number;
}

interface Agreement {
  page: string;
  device: Device;
  /** The CPU slowdown both sides ran with. */
  cpuMultiplier: number;
  rounds: number;
  cliScores: number[];
  perfwatchScores: number[];
  cliMedian: number;
  perfwatchMedian: number;
}

export interface RepeatabilityFigures {
  spreads: Spread[];
  agreement: Agreement[];
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sd = (xs: readonly number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
};

interface Kept {
  score: number;
  lcp: number;
  cpuMultiplier: number;
  runsMade: number;
  suspect: number;
  ms: number;
}

async function update(stack: LocalStack, url: string, device: Device): Promise<Kept> {
  const { ms, body } = await stack.update(url, device);
  const cell = auditResultSchema.parse(body)[device]!.london!;
  const kept = cell.runs[cell.median - 1]!;
  return {
    score: kept.performance!,
    lcp: kept.lcp!,
    cpuMultiplier: kept.cpuMultiplier ?? 1,
    runsMade: cell.runs.length,
    suspect: cell.runs.filter((r) => r.verdict === 'suspect').length,
    ms,
  };
}

async function measureSpreads(capacity: number, updates: number): Promise<Spread[]> {
  const stack = await startLocalStack([{ location: 'london', runsPerBrowser: 50, capacity }]);
  try {
    const projects = PAGES.flatMap(({ page, file, device }) =>
      RUNS.map((runs) => ({ page, device, runs, url: `${stack.siteUrl}${file}?runs=${runs}` })),
    );
    for (const p of projects) await stack.admin.addProject('stack', p.url, { locations: ['london'], runs: p.runs });
    // The first Chrome, the calibration and Lighthouse's import are paid before measuring.
    await update(stack, projects[0]!.url, projects[0]!.device);
    const kept = new Map(projects.map((p) => [p.url, [] as Kept[]]));
    for (let i = 0; i < updates; i++) {
      // Each round in another order, so no configuration always follows the same one.
      const order = projects.map((_, k) => projects[(k + i) % projects.length]!);
      for (const p of order) {
        const k = await update(stack, p.url, p.device);
        kept.get(p.url)!.push(k);
        process.stderr.write(
          `capacity ${capacity}, round ${i + 1}/${updates}, ${p.page}, ${p.runs} run(s): score ${k.score}, LCP ${Math.round(k.lcp)} ms, ${k.runsMade} runs made, ${k.suspect} suspect, ${Math.round(k.ms)} ms\n`,
        );
      }
    }
    return projects.map((p) => {
      const xs = kept.get(p.url)!;
      const lcps = xs.map((x) => x.lcp);
      return {
        page: p.page,
        device: p.device,
        capacity,
        runs: p.runs,
        updates: xs.length,
        scoreMean: mean(xs.map((x) => x.score)),
        scoreSd: sd(xs.map((x) => x.score)),
        lcpMeanMs: mean(lcps),
        lcpCv: sd(lcps) / mean(lcps),
        runsMade: xs.reduce((n, x) => n + x.runsMade, 0),
        suspectRuns: xs.reduce((n, x) => n + x.suspect, 0),
        medianUpdateMs: median(xs.map((x) => x.ms)),
      };
    });
  } finally {
    await stack.close();
  }
}

async function measureAgreement(rounds: number): Promise<Agreement[]> {
  const stack = await startLocalStack([{ location: 'london', runsPerBrowser: 50 }]);
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-cli-'));
  const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });
  try {
    const out: Agreement[] = [];
    for (const { page, file, device } of PAGES) {
      const url = `${stack.siteUrl}${file}?agreement`;
      await stack.admin.addProject('stack', url, { locations: ['london'], runs: 1 });
      const { cpuMultiplier } = await update(stack, url, device);
      // Stock Lighthouse's desktop preset; on mobile its defaults with the agent's CPU slowdown.
      const preset =
        device === 'desktop' ? ['--preset=desktop'] : [`--throttling.cpuSlowdownMultiplier=${cpuMultiplier}`];
      const cliScores: number[] = [];
      const perfwatchScores: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const cli = async () => {
          const report = join(dir, 'cli.json');
          await exec(
            join(root, 'node_modules/.bin/lighthouse'),
            [
              url,
              ...preset,
              '--quiet',
              '--output=json',
              `--output-path=${report}`,
              `--chrome-flags=${flags.join(' ')}`,
            ],
            {
              env: { ...process.env, CHROME_PATH: process.env['CHROME_PATH'] ?? '/usr/bin/chromium' },
              maxBuffer: 64 * 1024 * 1024,
            },
          );
          const lhr = JSON.parse(await readFile(report, 'utf8')) as { categories: { performance: { score: number } } };
          cliScores.push(Math.round(lhr.categories.performance.score * 100));
        };
        const ours = async () => perfwatchScores.push((await update(stack, url, device)).score);
        // Alternate which side goes first.
        for (const side of i % 2 ? [ours, cli] : [cli, ours]) await side();
        process.stderr.write(
          `agreement ${page} round ${i + 1}/${rounds}: stock CLI ${cliScores.at(-1)}, perfwatch ${perfwatchScores.at(-1)}\n`,
        );
      }
      out.push({
        page,
        device,
        cpuMultiplier,
        rounds,
        cliScores,
        perfwatchScores,
        cliMedian: median(cliScores),
        perfwatchMedian: median(perfwatchScores),
      });
    }
    return out;
  } finally {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function measureRepeatability(updates = 10): Promise<RepeatabilityFigures> {
  const spreads = [...(await measureSpreads(1, updates)), ...(await measureSpreads(2, updates))];
  const agreement = await measureAgreement(updates);
  return { spreads, agreement };
}

/** The section of bench/results.md, each goal beside its figure. */
export function repeatabilitySection(figures: RepeatabilityFigures, date: string): string[] {
  const meets = (ok: boolean) => (ok ? 'met' : '**not met**');
  const goal = (s: Spread, kind: 'sd' | 'cv') => {
    if (s.runs !== 5) return '—';
    return kind === 'sd'
      ? `≤ ${GOALS.medianOf5ScoreSd}: ${meets(s.scoreSd <= GOALS.medianOf5ScoreSd)}`
      : `≤ ${GOALS.medianOf5LcpCv * 100} %: ${meets(s.lcpCv <= GOALS.medianOf5LcpCv)}`;
  };
  const updates = figures.spreads[0]?.updates ?? 0;
  // Also when a row has too few updates for a spread (a smoke run with BENCH_REPEAT_UPDATES=1).
  const fixed = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : '—');
  return [
    `## Repeatability (${updates} sync updates per row, one calibrated agent, verdict re-tests on)`,
    '',
    `- measured ${date}; every row of this section and the next in the same run, configurations interleaved round by round`,
    '',
    '| page | device | agent capacity | runs per update | score mean | score SD | goal | LCP mean | LCP CV | goal | runs made (suspect) | update wall time, median |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...figures.spreads.map(
      (s) =>
        `| ${s.page} | ${s.device} | ${s.capacity} | ${s.runs === 1 ? '1 run' : `median of ${s.runs}`} | ${s.scoreMean.toFixed(1)} | ${fixed(s.scoreSd, 2)} | ${goal(s, 'sd')} | ${Math.round(s.lcpMeanMs)} ms | ${fixed(s.lcpCv * 100, 1)} % | ${goal(s, 'cv')} | ${s.runsMade} (${s.suspectRuns}) | ${(s.medianUpdateMs / 1000).toFixed(1)} s |`,
    ),
    '',
    "At agent capacity 2 every first-round run of a multi-run update shares its agent with another and is suspect, so the median rests on the re-tests (at most `MAX_RETESTS`, 2): there a median of 5 is no steadier than a median of 3. Where numbers must compare, run agents at capacity 1. The fixture page on mobile runs under the agent's calibrated CPU slowdown (the agreement table gives it).",
    '',
    `## Agreement with stock Lighthouse (${figures.agreement[0]?.rounds ?? 0} alternating rounds: a \`lighthouse\` CLI run in a process of its own, a 1-run perfwatch update)`,
    '',
    '| page | device | CPU slowdown, both sides | stock CLI median | perfwatch median | difference | goal | stock CLI scores | perfwatch scores |',
    '|---|---|---|---|---|---|---|---|---|',
    ...figures.agreement.map((a) => {
      const difference = a.perfwatchMedian - a.cliMedian;
      return `| ${a.page} | ${a.device} | ${a.device === 'desktop' ? '1 (`--preset=desktop`)' : `${a.cpuMultiplier} (the agent's calibration)`} | ${a.cliMedian} | ${a.perfwatchMedian} | ${difference >= 0 ? '+' : ''}${difference} | ≤ ${GOALS.cliMedianDifference}: ${meets(Math.abs(difference) <= GOALS.cliMedianDifference)} | ${a.cliScores.join(' ')} | ${a.perfwatchScores.join(' ')} |`;
    }),
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureRepeatability(Number(process.argv[2] ?? 10));
  process.stdout.write(`${repeatabilitySection(figures, new Date().toISOString()).join('\n')}\n`);
}

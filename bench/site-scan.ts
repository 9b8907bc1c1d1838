/**
 * A site scan side by side: perfwatch (one location, one agent at capacity 1, then 2) against
 * Unlighthouse (`@unlighthouse/cli`, as many pages at once), each page's score and LCP against a
 * stock `lighthouse` CLI run, all on the demo shop (200 pages in 10 templates) and the same
 * Chromium, in one run. Order: the stock runs, then per parallelism the two tools, the first of
 * them alternating, so neither always runs on a machine the other just warmed or loaded; with
 * --retests-off, where runs share an agent (parallelism 2), perfwatch also without re-tests.
 * Fails (throws) when a tool has no result for a page: no value is ever made up.
 *   node bench/site-scan.ts [--pages N (default 200)] [--parallelism 1,2] [--retests-off]
 * `BENCH_ONLY=site-scan BENCH_SITE_PAGES=40 npm run bench` writes its section of results.md.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { median } from '@perfwatch/common';
import { startDemoSite } from '@perfwatch/local';
import { samplePaths, valuesOf, type ToolScan } from './site-scan-pages.ts';
import { scanWithStockLighthouse } from './site-scan-lighthouse.ts';
import { scanWithUnlighthouse } from './site-scan-unlighthouse.ts';
import { scanWithPerfwatch } from './site-scan-perfwatch.ts';

export interface SiteScanFigures {
  paths: string[];
  cores: number;
  benchmarkIndex: number;
  date: string;
  stock: ToolScan;
  /** Per parallelism, in the order run. */
  scans: ToolScan[];
}

/**
 * `retestsOff`: where runs share an agent, also perfwatch without re-tests of suspect runs.
 * Each scan's figures go to stderr as a line of JSON as soon as it ends.
 */
export async function measureSiteScan(
  pages = 200,
  parallelisms: readonly number[] = [1, 2],
  retestsOff = false,
): Promise<SiteScanFigures> {
  const chromePath = process.env['CHROME_PATH'] ?? '/usr/bin/chromium';
  const paths = samplePaths(pages);
  const site = await startDemoSite({ site: 'shop' });
  const origin = site.url.replace(/\/$/, '');
  const date = new Date().toISOString();
  try {
    const { scan: stock, benchmarkIndex } = await scanWithStockLighthouse(origin, paths, chromePath);
    valuesOf(stock, paths);
    logScan(stock, benchmarkIndex);
    const scans: ToolScan[] = [];
    for (const [i, parallelism] of parallelisms.entries()) {
      const tools = [
        () => scanWithUnlighthouse(origin, paths, parallelism, chromePath),
        () => scanWithPerfwatch(origin, paths, parallelism),
      ];
      if (retestsOff && parallelism > 1) tools.splice(1, 0, () => scanWithPerfwatch(origin, paths, parallelism, false));
      for (const tool of i % 2 ? tools.reverse() : tools) {
        const scan = await tool();
        valuesOf(scan, paths);
        scans.push(scan);
        logScan(scan);
      }
    }
    return { paths, cores: availableParallelism(), benchmarkIndex, date, stock, scans };
  } finally {
    await site.close();
  }
}

const logScan = (scan: ToolScan, benchmarkIndex?: number) =>
  process.stderr.write(`${JSON.stringify({ ...scan, pages: Object.fromEntries(scan.pages), benchmarkIndex })}\n`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const perHourPerCore = (f: SiteScanFigures, scan: ToolScan) =>
  (f.paths.length / (scan.wallMs / 3_600_000) / f.cores).toFixed(0);
const cell = (v: { score: number; lcpMs: number }) => `${v.score} / ${Math.round(v.lcpMs)}`;

/** How far a scan's pages are from the stock runs: median |Δscore|, median |ΔLCP|, share within 2 points. */
function agreement(f: SiteScanFigures, scan: ToolScan) {
  const stock = valuesOf(f.stock, f.paths);
  const ours = valuesOf(scan, f.paths);
  const dScore = ours.map((v, i) => Math.abs(v.score - stock[i]!.score));
  const dLcp = ours.map((v, i) => Math.abs(v.lcpMs - stock[i]!.lcpMs));
  return {
    score: median(dScore),
    lcpMs: median(dLcp),
    within2: dScore.filter((d) => d <= 2).length / dScore.length,
  };
}

const SCAN_COLUMNS =
  "| parallelism | tool | wall time | audits per hour per core | ÷ Unlighthouse's wall time (goal ≤ 1.0) | median \\|Δscore\\| vs stock | median \\|ΔLCP\\| vs stock | pages within 2 points | load average as it ended | notes |";

function scanRow(f: SiteScanFigures, scan: ToolScan, unlighthouse: ToolScan): string {
  const ratio = scan.wallMs / unlighthouse.wallMs;
  const a = agreement(f, scan);
  const goal = scan === unlighthouse ? '—' : `${ratio.toFixed(2)}: ${ratio <= 1 ? 'met' : '**not met**'}`;
  return `| ${scan.parallelism} | ${scan.tool} | ${seconds(scan.wallMs)} | ${perHourPerCore(f, scan)} | ${goal} | ${a.score} | ${Math.round(a.lcpMs)} ms | ${(a.within2 * 100).toFixed(0)} % | ${scan.loadAvg.toFixed(1)} | ${scan.note ?? ''} |`;
}

/** The section of bench/results.md. */
export function siteScanSection(f: SiteScanFigures): string[] {
  const parallelisms = [...new Set(f.scans.map((s) => s.parallelism))];
  const unlighthouseAt = (p: number) => f.scans.find((s) => s.tool === 'Unlighthouse' && s.parallelism === p)!;
  // perfwatch's rows first, then Unlighthouse's, per parallelism.
  const ordered = parallelisms.flatMap((p) =>
    f.scans
      .filter((s) => s.parallelism === p)
      .sort((a, b) => Number(a.tool === 'Unlighthouse') - Number(b.tool === 'Unlighthouse')),
  );
  return [
    `## Site scan against Unlighthouse (demo shop, ${f.paths.length} of its 200 pages over its 10 templates, desktop, 1 run a page; goal: perfwatch's wall time ≤ 1.0× Unlighthouse's at the same parallelism, its per-page values within 2 points of stock Lighthouse)`,
    '',
    `- measured ${f.date} with \`--pages ${f.paths.length}\` (the default is all 200), ${f.cores} cores (\`os.availableParallelism()\`), Lighthouse's benchmark index ${Math.round(f.benchmarkIndex)} (median of the stock runs); order: ${['stock lighthouse', ...f.scans.map((s) => `${s.tool} ×${s.parallelism}`)].join(', ')}`,
    '',
    SCAN_COLUMNS,
    '|---|---|---|---|---|---|---|---|---|---|',
    ...ordered.map((scan) => scanRow(f, scan, unlighthouseAt(scan.parallelism))),
    `| 1 | stock \`lighthouse\` CLI (the reference) | ${seconds(f.stock.wallMs)} | ${perHourPerCore(f, f.stock)} | — | — | — | — | ${f.stock.loadAvg.toFixed(1)} | one page after the other, a process each |`,
    '',
    'Per page, score / LCP (ms):',
    '',
    `| page | stock lighthouse | ${ordered.map((s) => `${s.tool} ×${s.parallelism}`).join(' | ')} |`,
    `|---|---|${ordered.map(() => '---').join('|')}|`,
    ...f.paths.map(
      (path) =>
        `| ${path} | ${cell(f.stock.pages.get(path)!)} | ${ordered.map((s) => cell(s.pages.get(path)!)).join(' | ')} |`,
    ),
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { pages: { type: 'string' }, parallelism: { type: 'string' }, 'retests-off': { type: 'boolean' } },
  });
  const figures = await measureSiteScan(
    Number(values.pages ?? 200),
    (values.parallelism ?? '1,2').split(',').map(Number),
    values['retests-off'] ?? false,
  );
  process.stdout.write(`${siteScanSection(figures).join('\n')}\n`);
}

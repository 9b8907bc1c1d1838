/**
 * `npm run bench`: runs every benchmark and writes bench/results.md with the machine, the
 * date and each figure. Not part of `npm test`: figures are ratios measured side by side.
 */
import { writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measureAuditOverhead } from './audit-overhead.ts';
import { measureOverviewMemory } from './overview-memory.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const overhead = await measureAuditOverhead(Number(process.env['BENCH_PAIRS'] ?? 5));
const overview = await measureOverviewMemory(Number(process.env['BENCH_OVERVIEW_RECORDS'] ?? 1_000_000));
const lines = [
  '# perfwatch benchmarks',
  '',
  `- date: ${new Date().toISOString()}`,
  `- machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  '',
  '## Audit path overhead (fixture page, mobile, 1 location, 1 run, cold Chrome per run)',
  '',
  '| figure | value |',
  '|---|---|',
  `| pairs (alternating) | ${overhead.pairs} |`,
  `| bare lighthouse CLI, median | ${Math.round(median(overhead.cliMs))} ms |`,
  `| perfwatch sync update, median | ${Math.round(median(overhead.updateMs))} ms |`,
  `| agent's own Lighthouse run, median | ${Math.round(median(overhead.agentLighthouseMs))} ms |`,
  `| update ÷ bare CLI (median of pair ratios) | ${overhead.updateOverCli.toFixed(3)} |`,
  `| update ÷ agent's Lighthouse time (median of ratios) | ${overhead.updateOverAgentLighthouse.toFixed(3)} |`,
  '',
  `## Overview streaming (gateway process, old-generation heap capped at ${overview.heapCapMb} MB)`,
  '',
  '| figure | value |',
  '|---|---|',
  `| gateway RSS at start | ${overview.baselineRssMb.toFixed(0)} MB |`,
  `| peak RSS after ${overview.smallRecords.toLocaleString('en')} records | ${overview.peakAfterSmallMb.toFixed(0)} MB |`,
  `| peak RSS after ${overview.largeRecords.toLocaleString('en')} records | ${overview.peakAfterLargeMb.toFixed(0)} MB |`,
  `| peak ratio, large ÷ small | ${(overview.peakAfterLargeMb / overview.peakAfterSmallMb).toFixed(2)} |`,
  `| large response | ${overview.largeResponseMb.toFixed(0)} MB in ${overview.largeSeconds.toFixed(0)} s (${Math.round(overview.recordsPerSecond)} records/s) |`,
  '',
];
const out = join(dirname(fileURLToPath(import.meta.url)), 'results.md');
await writeFile(out, lines.join('\n'));
process.stdout.write(`${lines.join('\n')}\nwritten to ${out}\n`);

/**
 * How repeatable is the performance score? Runs 10 updates of the fixture page with one run
 * and 10 with three runs (the median run kept), interleaved, through a real gateway, NATS and a
 * warm agent, and prints the spread of the stored performance score and LCP for each.
 *   node scripts/repeatability.ts [updates=10]   (writes bench/repeatability.md)
 */
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { auditResultSchema } from '@perfwatch/common';
import { root, startLocalStack } from '../bench/local-stack.ts';

const updates = Number(process.argv[2] ?? 10);
const stack = await startLocalStack([{ location: 'london', runsPerBrowser: 50 }]);
const one = `${stack.siteUrl}index.html?runs=1`;
const three = `${stack.siteUrl}index.html?runs=3`;
await stack.admin.addProject('stack', one, { locations: ['london'], runs: 1 });
await stack.admin.addProject('stack', three, { locations: ['london'], runs: 3 });

const samples = { one: [] as Array<{ score: number; lcp: number }>, three: [] as Array<{ score: number; lcp: number }> };
try {
  for (let i = 0; i < updates; i++) {
    for (const [name, url] of i % 2 ? ([['three', three], ['one', one]] as const) : ([['one', one], ['three', three]] as const)) {
      const cell = auditResultSchema.parse((await stack.update(url)).body).mobile!.london!;
      const kept = cell.runs[cell.median - 1]!;
      samples[name].push({ score: kept.performance!, lcp: kept.lcp! });
      process.stderr.write(`update ${i + 1}/${updates} ${name}: score ${kept.performance}, LCP ${Math.round(kept.lcp!)} ms\n`);
    }
  }
} finally {
  await stack.close();
}

const stats = (xs: number[]) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1));
  return { mean, sd, min: Math.min(...xs), max: Math.max(...xs) };
};
const row = (name: string, xs: Array<{ score: number; lcp: number }>) => {
  const s = stats(xs.map((x) => x.score));
  const l = stats(xs.map((x) => x.lcp));
  return `| ${name} | ${xs.length} | ${s.mean.toFixed(1)} | ${s.sd.toFixed(2)} | ${s.min}–${s.max} | ${l.mean.toFixed(0)} ms | ${l.sd.toFixed(0)} ms |`;
};
const text = [
  '# Repeatability of the performance score (fixture page, mobile, one warm agent)',
  '',
  `- date: ${new Date().toISOString()}; machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; ${updates} updates each, interleaved`,
  '',
  '| runs per update | updates | score mean | score SD | score range | LCP mean | LCP SD |',
  '|---|---|---|---|---|---|---|',
  row('1 run', samples.one),
  row('median of 3', samples.three),
  '',
];
await writeFile(join(root, 'bench/repeatability.md'), text.join('\n'));
process.stdout.write(text.join('\n'));

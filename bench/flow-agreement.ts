/**
 * Does a perfwatch flow measure what stock Lighthouse measures? The demo shop's add-to-cart flow
 * (`cart.html?work=MS`: the button's handler holds the main thread MS ms) on desktop, `runs`
 * alternating rounds of:
 * - perfwatch's path: the agent's LighthouseRunner (a fresh Chrome per run, the target guard
 *   and its proxy as shipped) given the flow in its run request, as the agent runs a flow job;
 * - stock Lighthouse: bench/stock-flow.ts in a process of its own (chrome-launcher, Puppeteer,
 *   Lighthouse's `startFlow` with the desktop config), on the same Chromium with the same flags.
 * Both sides slow nothing down on desktop, so they measure the same thing. Compared: the
 * timespan step's INP and TBT, perfwatch's median against the stock runs' spread.
 *   node bench/flow-agreement.ts [runs=5] [work=120]
 * `BENCH_ONLY=flows npm run bench` writes its section of results.md.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { chromeFlags, createLighthouseRunner, startGuardProxy } from '@perfwatch/agent';
import { createTargetGuard, flowSchema, median, parseAllowList, resolvedFlow } from '@perfwatch/common';
import { startDemoSite } from '@perfwatch/local';
import { z } from 'zod';
import { root } from './local-stack.ts';

const exec = promisify(execFile);

/** The timespan's figures of one run, ms; INP and its parts null when Lighthouse found no interaction. */
interface Timespan {
  inpMs: number | null;
  tbtMs: number;
  /** INP's parts (Lighthouse's INP breakdown): the wait for the main thread, the handlers, the frame after. */
  inputDelayMs: number | null;
  processingMs: number | null;
  presentationMs: number | null;
}

export interface FlowAgreementFigures {
  date: string;
  workMs: number;
  stock: Timespan[];
  perfwatch: Timespan[];
}

const FLOW = flowSchema.parse({
  steps: [
    { kind: 'navigate', name: 'product' },
    { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click', selector: '#add-to-cart' }] },
    { kind: 'snapshot', name: 'cart' },
  ],
});

const stepAuditsSchema = z.object({
  audits: z.object({
    // Absent when the trace holds no interaction, as when the timespan ends before the click's paint.
    'interaction-to-next-paint': z.object({ numericValue: z.number().optional() }),
    'total-blocking-time': z.object({ numericValue: z.number() }),
    // Read apart (breakdownSchema): without an interaction it has no subparts.
    'inp-breakdown-insight': z.unknown(),
  }),
});

const breakdownSchema = z.object({
  details: z.object({
    // The subparts' table, then (when Lighthouse found its node) the interaction's element.
    items: z.array(z.object({ items: z.array(z.object({ subpart: z.string(), duration: z.number() })).optional() })),
  }),
});

/** The figures of a timespan step's result (its audits, or the whole LHR). */
function timespanOf(lhr: unknown): Timespan {
  const { audits } = stepAuditsSchema.parse(lhr);
  const breakdown = breakdownSchema.safeParse(audits['inp-breakdown-insight']);
  const parts = (breakdown.success && breakdown.data.details.items.find((item) => item.items)?.items) || [];
  const part = (subpart: string) => parts.find((p) => p.subpart === subpart)?.duration ?? null;
  return {
    inpMs: audits['interaction-to-next-paint'].numericValue ?? null,
    tbtMs: audits['total-blocking-time'].numericValue,
    inputDelayMs: part('inputDelay'),
    processingMs: part('processingDuration'),
    presentationMs: part('presentationDelay'),
  };
}

/** `runs` alternating rounds, the first side of each round alternating too. */
export async function measureFlowAgreement(runs = 5, workMs = 120): Promise<FlowAgreementFigures> {
  const chromePath = process.env['CHROME_PATH'] ?? '/usr/bin/chromium';
  const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });
  const logger = pino({ level: 'warn' });
  const guard = createTargetGuard({ allow: parseAllowList('127.0.0.1/32') });
  const proxy = await startGuardProxy({ guard, logger });
  const runner = createLighthouseRunner({
    chromePath,
    chromeFlags: flags,
    logger,
    runsPerBrowser: 0,
    guard: { guard, proxy },
  });
  const site = await startDemoSite();
  const url = `${site.url}cart.html?work=${workMs}`;
  const figures: FlowAgreementFigures = { date: new Date().toISOString(), workMs, stock: [], perfwatch: [] };
  const sides = {
    async stock() {
      // The bench's own Node (24): the stock script is TypeScript run as it is.
      const script = [join(root, 'bench/stock-flow.ts'), url, chromePath, JSON.stringify(flags)];
      const { stdout } = await exec(process.execPath, script, { cwd: root });
      figures.stock.push(timespanOf(JSON.parse(stdout.trim().split('\n').at(-1)!)));
    },
    async perfwatch() {
      const { steps } = await runner.run({ url, device: 'desktop', timeoutMs: 300_000, flow: resolvedFlow(FLOW, url) });
      figures.perfwatch.push(timespanOf(steps?.[1]?.lhr));
    },
  };
  try {
    for (let i = 0; i < runs; i++) {
      const order = i % 2 === 0 ? (['stock', 'perfwatch'] as const) : (['perfwatch', 'stock'] as const);
      for (const side of order) {
        await sides[side]();
        const last = figures[side].at(-1)!;
        process.stderr.write(`round ${i + 1}/${runs} ${side}: ${JSON.stringify(last)}\n`);
      }
    }
    return figures;
  } finally {
    await runner.close();
    await proxy.close();
    await site.close();
  }
}

type Metric = keyof Timespan;
const ms = (x: number) => `${Math.round(x)} ms`;
const measured = (xs: Array<number | null>) => xs.filter((x): x is number => x !== null);
/** Each run's value, "—" for a run where Lighthouse found no interaction. */
const runsOf = (xs: Array<number | null>) => xs.map((x) => (x === null ? '—' : Math.round(x))).join(' ');

/** The stock runs' min–max (of those that measured it), perfwatch's median and whether it lies within them. */
function compared(f: FlowAgreementFigures, metric: Metric) {
  const stock = f.stock.map((run) => run[metric]);
  const ours = f.perfwatch.map((run) => run[metric]);
  const [stockMeasured, oursMeasured] = [measured(stock), measured(ours)];
  if (stockMeasured.length === 0 || oursMeasured.length === 0) return { stock, ours, figures: null };
  const [min, max] = [Math.min(...stockMeasured), Math.max(...stockMeasured)];
  const stockMedian = median(stockMeasured);
  const perfwatchMedian = median(oursMeasured);
  const within = perfwatchMedian >= min && perfwatchMedian <= max;
  return {
    stock,
    ours,
    figures: { min, max, stockMedian, perfwatchMedian, within, ratio: perfwatchMedian / stockMedian },
  };
}

function row(f: FlowAgreementFigures, metric: Metric, label: string): string {
  const { stock, ours, figures: c } = compared(f, metric);
  const cells = c
    ? `${ms(c.min)}–${ms(c.max)} | ${ms(c.stockMedian)} | ${ms(c.perfwatchMedian)} | ${c.within ? 'yes' : '**no**'} | ${c.ratio.toFixed(2)}`
    : '— | — | — | **not measured** | —';
  return `| ${label} | ${cells} | ${runsOf(stock)} | ${runsOf(ours)} |`;
}

/** Whether perfwatch's medians of INP and TBT both lie within the stock runs' spread. */
function flowsAgree(f: FlowAgreementFigures): boolean {
  return (['inpMs', 'tbtMs'] as const).every((metric) => compared(f, metric).figures?.within === true);
}

/** What a "—" among the runs means, when there is one. */
function noInp(f: FlowAgreementFigures): string {
  const count = (runs: Timespan[]) => runs.filter((run) => run.inpMs === null).length;
  const [stock, ours] = [count(f.stock), count(f.perfwatch)];
  if (stock + ours === 0) return '';
  return ` —: Lighthouse found no interaction in the timespan and reported no INP (stock ${stock} of ${f.stock.length} runs, perfwatch ${ours} of ${f.perfwatch.length}); the spread and medians are of the runs that measured one.`;
}

/** The section of bench/results.md. */
export function flowAgreementSection(f: FlowAgreementFigures): string[] {
  return [
    `## User flows: agreement with stock Lighthouse (demo shop's \`cart.html?work=${f.workMs}\`, desktop, ${f.stock.length} alternating rounds; goal: perfwatch's median INP and TBT of the timespan within the stock runs' spread)`,
    '',
    `- measured ${f.date}; goal ${flowsAgree(f) ? 'met' : '**not met**'}`,
    '',
    '| timespan "add to cart" | stock runs, min–max | stock median | perfwatch median | within the stock spread | perfwatch ÷ stock (medians) | stock runs | perfwatch runs |',
    '|---|---|---|---|---|---|---|---|',
    row(f, 'inpMs', 'INP'),
    row(f, 'tbtMs', 'TBT'),
    row(f, 'inputDelayMs', "INP's input delay"),
    row(f, 'processingMs', "INP's processing"),
    row(f, 'presentationMs', "INP's presentation delay"),
    '',
    `The flow: navigate to the product page, a timespan clicking "Add to cart" (its handler holds the main thread ${f.workMs} ms, then shows the cart), a snapshot of the cart. perfwatch: the agent's LighthouseRunner in the bench process, the flow in its run request (\`resolvedFlow\`), a fresh Chrome per run behind the target guard's proxy as the agent ships, the flow in a browser context of its own; its timespan clicks through Puppeteer's locator and ends after the agent's settle (two frames, then the network quiet for 0.5 s, at most 5 s). Stock: \`node bench/stock-flow.ts\`, a process of its own per run with no perfwatch code: chrome-launcher, \`puppeteer.connect\`, Lighthouse's \`startFlow(page, {config: desktopConfig, flags: {disableFullPageScreenshot: true}})\`, \`page.click('#add-to-cart')\`, the timespan ended once the cart's line is in the page. Both on the same Chromium with the agent's Chrome flags, neither slowing the CPU (Lighthouse's desktop config); the first side of each round alternates. INP's parts are Lighthouse's INP breakdown of the same step (the wait for the main thread, the handler, the frame after it), there to explain a difference; the goal is on INP and TBT.${noInp(f)}`,
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureFlowAgreement(Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 120));
  process.stdout.write(`${flowAgreementSection(figures).join('\n')}\n`);
}

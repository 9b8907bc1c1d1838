/**
 * The reference for bench/flow-agreement.ts: the demo shop's add-to-cart flow through
 * Lighthouse's own flow API as its documentation shows it, in a process of its own and with no
 * perfwatch code: Chrome from chrome-launcher, Puppeteer connected to it, `startFlow` with the
 * desktop config, a navigation, a timespan clicking "Add to cart" with plain `page.click` until
 * the cart shows, a snapshot. Prints the timespan's INP, TBT and INP breakdown audits as
 * Lighthouse wrote them, as one line of JSON.
 *   node bench/stock-flow.ts <url> <chrome path> <chrome flags as a JSON array>
 */
import * as chromeLauncher from 'chrome-launcher';
import puppeteer from 'puppeteer-core';
import { desktopConfig, startFlow } from 'lighthouse';
import { z } from 'zod';

const [url, chromePath, flagsJson] = process.argv.slice(2);
if (!url || !chromePath || !flagsJson) throw new Error('usage: node bench/stock-flow.ts <url> <chrome> <flags JSON>');
const chromeFlags = z.array(z.string()).parse(JSON.parse(flagsJson));

/** What the bench reads of the timespan, as Lighthouse wrote it (bench/flow-agreement.ts checks it). */
const KEPT = ['interaction-to-next-paint', 'total-blocking-time', 'inp-breakdown-insight'] as const;
const timespanSchema = z.object({ gatherMode: z.literal('timespan'), audits: z.record(z.string(), z.unknown()) });

const chrome = await chromeLauncher.launch({ chromePath, chromeFlags, logLevel: 'silent' });
try {
  const browser = await puppeteer.connect({ browserURL: `http://127.0.0.1:${chrome.port}` });
  try {
    const page = await browser.newPage();
    const flow = await startFlow(page as never, { config: desktopConfig, flags: { disableFullPageScreenshot: true } });
    await flow.navigate(url, { name: 'product' });
    await flow.startTimespan({ name: 'add to cart' });
    await page.click('#add-to-cart');
    await page.waitForSelector('#cart-lines li');
    await flow.endTimespan();
    await flow.snapshot({ name: 'cart' });
    const result = await flow.createFlowResult();
    const { audits } = timespanSchema.parse(result.steps[1]?.lhr);
    process.stdout.write(`${JSON.stringify({ audits: Object.fromEntries(KEPT.map((id) => [id, audits[id]])) })}\n`);
  } finally {
    await browser.disconnect();
  }
} finally {
  chrome.kill();
}

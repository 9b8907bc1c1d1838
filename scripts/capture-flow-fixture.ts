/**
 * Captures one real user flow of the fixture site for the unit and dashboard tests of flows
 * (issue 36): the demo shop's product page (`cart.html?work=120`), a timespan clicking "Add to
 * cart" and a snapshot of the cart, on desktop, each step's result trimmed and its screenshots
 * made small as the agent sends them. `npm run capture-fixtures` runs it after the navigations'.
 */
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, flowSchema, resolvedFlow, trimLighthouseResult } from '@perfwatch/common';
import { chromeFlags, chromeRunSettings, compactScreenshots, createLighthouseRunner } from '@perfwatch/agent';
import { startDemoSite } from '@perfwatch/local';
import { CART_FLOW } from '../test/support/lhr-fixtures.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const file = join(root, 'test/fixtures/lhr/flow-desktop.json');
const logger = createLogger({ name: 'capture' });
const site = await startDemoSite();
const runner = createLighthouseRunner({
  chromePath: chromeRunSettings.settings.CHROME_PATH.parse(process.env['CHROME_PATH']),
  chromeFlags: chromeFlags({ noSandbox: process.getuid?.() === 0 }),
  logger,
  runsPerBrowser: 0,
});
try {
  const url = `${site.url}cart.html?work=120`;
  const flow = flowSchema.parse(CART_FLOW);
  const { steps, lighthouseMs } = await runner.run({
    url,
    device: 'desktop',
    timeoutMs: 300_000,
    flow: resolvedFlow(flow, url),
  });
  const kept = await Promise.all(
    steps!.map(async (step) => ({
      ...step,
      lhr: await compactScreenshots(trimLighthouseResult(step.lhr, { keepScreenshots: true })),
    })),
  );
  // The port changes between captures; a stable URL keeps fixture diffs readable.
  await writeFile(file, JSON.stringify({ steps: kept }).replaceAll(site.url, 'http://fixture.test/') + '\n');
  logger.info({ file, lighthouseMs: Math.round(lighthouseMs) }, 'captured');
} finally {
  await runner.close();
  await site.close();
}

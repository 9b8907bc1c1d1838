/**
 * Captures real Lighthouse results of the fixture site for the unit tests of KPI extraction
 * and median-run selection: three mobile runs and three desktop runs of `index.html`, trimmed
 * as the agent trims them. Run it again after a Lighthouse upgrade: `npm run capture-fixtures`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, trimLighthouseResult } from '@perfwatch/common';
import { chromeFlags, chromeRunSettings, createLighthouseRunner } from '@perfwatch/agent';
import { startDemoSite } from '@perfwatch/local';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'test/fixtures/lhr');
const logger = createLogger({ name: 'capture' });
const site = await startDemoSite();
const runner = createLighthouseRunner({
  chromePath: chromeRunSettings.settings.CHROME_PATH.parse(process.env['CHROME_PATH']),
  chromeFlags: chromeFlags({ noSandbox: process.getuid?.() === 0 }),
  logger,
  runsPerBrowser: chromeRunSettings.settings.PERFWATCH_RUNS_PER_BROWSER.parse(undefined),
});
await mkdir(out, { recursive: true });
try {
  for (const device of ['mobile', 'desktop'] as const) {
    for (let run = 1; run <= 3; run++) {
      const { lhr, lighthouseMs } = await runner.run({ url: `${site.url}index.html`, device, timeoutMs: 120_000 });
      // The port changes between captures; a stable URL keeps fixture diffs readable.
      const stable = JSON.parse(JSON.stringify(trimLighthouseResult(lhr)).replaceAll(site.url, 'http://fixture.test/'));
      const file = join(out, `${device}-${run}.json`);
      await writeFile(file, JSON.stringify(stable, null, 1) + '\n');
      logger.info(
        { file, lighthouseMs: Math.round(lighthouseMs), performance: lhr.categories['performance']?.score },
        'captured',
      );
    }
  }
} finally {
  await runner.close();
  await site.close();
}

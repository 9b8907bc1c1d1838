import puppeteer from 'puppeteer-core';

/** Readings of the index one calibration takes. */
const SAMPLES = 5;

/**
 * Readings of the machine's benchmark index as the Chrome at `port` gives them, each taken the
 * way Lighthouse takes a run's own (`getBaseArtifacts`): Lighthouse's benchmark
 * (`computeBenchmarkIndex`) evaluated once in a tab just opened. The same benchmark repeated in
 * one tab reads higher from the second time on (its code is optimised by then), so a baseline
 * of repeated readings, or the fastest of several, stood above every run's own index (measured:
 * the fastest of five warm readings 3,738–4,071 where runs read 3,445–3,895 on one machine).
 * About a second a reading.
 */
export async function sampleBenchmarkIndex(port: number, samples = SAMPLES): Promise<number[]> {
  const { pageFunctions } = (await import('lighthouse/core/lib/page-functions.js')) as unknown as {
    pageFunctions: { computeBenchmarkIndex: () => number };
  };
  const { computeBenchmarkIndex } = pageFunctions;
  const browser = await puppeteer.connect({ browserURL: `http://127.0.0.1:${port}`, defaultViewport: null });
  try {
    const readings: number[] = [];
    for (let i = 0; i < samples; i++) {
      const page = await browser.newPage();
      try {
        readings.push(Math.round(await page.evaluate(computeBenchmarkIndex)));
      } finally {
        await page.close().catch(() => undefined);
      }
    }
    return readings;
  } finally {
    // Disconnect only: the Chrome belongs to the runner.
    await browser.disconnect();
  }
}

import puppeteer from 'puppeteer-core';

/** Times Lighthouse's benchmark runs for one calibration; the fastest is kept. */
const SAMPLES = 5;

/**
 * The benchmark index of the machine as the Chrome at `port` sees it: Lighthouse's own
 * benchmark (`computeBenchmarkIndex`, the page function Lighthouse runs at every audit), run in
 * a blank tab `SAMPLES` times. Other work on the host only ever slows a sample down, so the
 * fastest is the nearest to the machine's own speed. About half a second a sample.
 */
export async function measureBenchmarkIndex(port: number): Promise<number> {
  const { pageFunctions } = (await import('lighthouse/core/lib/page-functions.js')) as unknown as {
    pageFunctions: { computeBenchmarkIndex: () => number };
  };
  const { computeBenchmarkIndex } = pageFunctions;
  const browser = await puppeteer.connect({ browserURL: `http://127.0.0.1:${port}`, defaultViewport: null });
  try {
    const page = await browser.newPage();
    try {
      const samples: number[] = [];
      for (let i = 0; i < SAMPLES; i++) samples.push(await page.evaluate(computeBenchmarkIndex));
      return Math.max(...samples);
    } finally {
      await page.close().catch(() => undefined);
    }
  } finally {
    // Disconnect only: the Chrome belongs to the runner.
    await browser.disconnect();
  }
}

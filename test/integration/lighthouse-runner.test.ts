import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { afterAll, describe, expect, inject, it } from 'vitest';
import {
  chromeFlags,
  createLighthouseRunner,
  startGuardProxy,
  type CpuCalibration,
  type GuardProxy,
} from '@perfwatch/agent';
import { cpuMultiplierFor, createTargetGuard, median, parseAllowList } from '@perfwatch/common';
import { silentLogger } from '../support/test-services.ts';

// The agent's Lighthouse runner with real Chromium and real Lighthouse on the fixture site.

/** Live processes whose command line carries `needle` (zombies awaiting their parent excluded). */
async function processesWith(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const state = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (cmdline.includes(needle) && !/\) Z /.test(state)) pids.push(Number(entry));
  }
  return pids;
}

const chromePath = process.env['CHROME_PATH'] ?? '/usr/bin/chromium';
const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });
const proxies: GuardProxy[] = [];

/** A runner behind the target guard, allowed to reach only `allow`. */
async function guardedRunner(allow: string, runsPerBrowser = 2, cpu?: CpuCalibration) {
  const guard = createTargetGuard({ allow: parseAllowList(allow) });
  const proxy = await startGuardProxy({ guard, logger: silentLogger });
  proxies.push(proxy);
  return createLighthouseRunner({
    chromePath,
    chromeFlags: flags,
    logger: silentLogger,
    runsPerBrowser,
    guard: { guard, proxy },
    ...(cpu ? { cpu } : {}),
  });
}

// The fixture site listens on 127.0.0.1 only; the guard lets this runner reach exactly that.
const runner = await guardedRunner('127.0.0.1/32');
afterAll(async () => {
  await runner.close();
  for (const proxy of proxies) await proxy.close();
});

describe('Lighthouse runner', () => {
  it('keeps Chrome warm between runs, replaces it after runsPerBrowser, and leaves no Chrome process behind', async () => {
    const page = `${inject('siteUrl')}index.html`;
    // The agent's calibration, measured in this runner's Chrome outside any run: readings taken
    // as Lighthouse takes a run's own, which a run alone on this idle runner reads alike.
    const readings = await runner.calibrate();
    expect(readings).toHaveLength(5);
    for (const reading of readings) expect(reading).toBeGreaterThan(0);
    const baseline = median(readings);
    const chrome = runner.chrome!;
    const first = await runner.run({
      url: page,
      device: 'mobile',
      timeoutMs: 120_000,
      baselineBenchmarkIndex: baseline,
    });
    expect(runner.chrome!.pid).toBe(chrome.pid);
    expect(chrome).not.toBeNull();
    expect(first.lhr.finalDisplayedUrl).toBe(page);
    // The browser and its helper processes all carry the profile directory.
    expect((await processesWith(chrome.userDataDir)).length).toBeGreaterThan(1);

    // A mobile run slows the CPU by the calculator's multiplier for the baseline it is given.
    expect(first.conditions).toMatchObject({
      baselineBenchmarkIndex: baseline,
      cpuMultiplier: cpuMultiplierFor(baseline) ?? 1,
      lighthouseVersion: first.lhr.lighthouseVersion,
    });
    expect(first.conditions!.benchmarkIndex).toBeGreaterThan(0);
    // What the host gave others while the run lasted is measured, as a share of its CPU.
    expect(first.conditions!.otherCpuShare).toBeGreaterThanOrEqual(0);
    expect(first.conditions!.otherCpuShare).toBeLessThanOrEqual(1);
    expect(
      (first.lhr.configSettings as { throttling: { cpuSlowdownMultiplier: number } }).throttling.cpuSlowdownMultiplier,
    ).toBe(first.conditions!.cpuMultiplier);

    const second = await runner.run({ url: page, device: 'desktop', timeoutMs: 120_000 });
    expect(second.lhr.configSettings?.formFactor).toBe('desktop');
    expect(second.conditions!.cpuMultiplier).toBe(1);
    // Two runs on one Chrome is this runner's limit: that Chrome is gone, profile and all.
    expect(runner.chrome).toBeNull();
    await expect.poll(() => processesWith(chrome.userDataDir), { timeout: 5_000 }).toEqual([]);
    expect(existsSync(chrome.userDataDir)).toBe(false);

    await runner.run({ url: page, device: 'mobile', timeoutMs: 120_000 });
    const next = runner.chrome!;
    expect(next.pid).not.toBe(chrome.pid);
    await runner.close();
    expect(runner.chrome).toBeNull();
    await expect.poll(() => processesWith(next.userDataDir), { timeout: 5_000 }).toEqual([]);
  }, 180_000);

  it('applies a fixed CPU multiplier as it is, and still records the benchmark index', async () => {
    const fixed = await guardedRunner('127.0.0.1/32', 1, { multiplier: 2.5 });
    try {
      const output = await fixed.run({
        url: `${inject('siteUrl')}index.html`,
        device: 'mobile',
        timeoutMs: 120_000,
        baselineBenchmarkIndex: 2460,
      });
      expect(output.conditions!.cpuMultiplier).toBe(2.5);
      expect(
        (output.lhr.configSettings as { throttling: { cpuSlowdownMultiplier: number } }).throttling
          .cpuSlowdownMultiplier,
      ).toBe(2.5);
      expect(output.conditions!.baselineBenchmarkIndex).toBe(2460);
      expect(output.conditions!.benchmarkIndex).toBeGreaterThan(0);
      // Without a baseline (no calibration could be made) a mobile run gets Lighthouse's own 4×.
      const uncalibrated = await runner.run({
        url: `${inject('siteUrl')}index.html`,
        device: 'mobile',
        timeoutMs: 120_000,
      });
      expect(uncalibrated.conditions).toMatchObject({ baselineBenchmarkIndex: null, cpuMultiplier: 4 });
    } finally {
      await fixed.close();
    }
  }, 120_000);

  it('gives up on a run past its timeout and retires that Chrome', async () => {
    const error = await runner
      .run({ url: `${inject('siteUrl')}slow.html`, device: 'mobile', timeoutMs: 500 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'RunFailure', code: 'RUN_TIMEOUT', retryable: true });
    expect(runner.chrome).toBeNull();
  }, 60_000);

  it('refuses a loopback or private target before Chrome starts when nothing allows it', async () => {
    const strict = await guardedRunner('');
    for (const url of [
      `${inject('siteUrl')}index.html`,
      'http://localhost:9/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]/',
    ]) {
      const error = await strict.run({ url, device: 'mobile', timeoutMs: 30_000 }).catch((e: unknown) => e);
      expect(error, url).toMatchObject({ name: 'RunFailure', code: 'TARGET_REFUSED', retryable: false });
    }
    expect(strict.chrome).toBeNull();
  });

  it('refuses a page that redirects to an address it may not reach', async () => {
    const site = new URL(inject('siteUrl'));
    // 127.0.0.2 is loopback too, but not in this runner's allow-list.
    const url = `${site.origin}/redirect?to=${encodeURIComponent(`http://127.0.0.2:${site.port}/index.html`)}`;
    const error = await runner.run({ url, device: 'mobile', timeoutMs: 60_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'RunFailure', code: 'TARGET_REFUSED', retryable: false });
    expect(String((error as Error).message)).toContain('127.0.0.2');
  }, 90_000);
});

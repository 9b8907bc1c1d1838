import * as chromeLauncher from 'chrome-launcher';
import type { Logger } from 'pino';
import type { Device } from '@perfwatch/common';
import { lighthouseResultSchema, type LighthouseResult } from '@perfwatch/common';
import { RunFailure } from './run-failure.ts';

export interface RunRequest {
  url: string;
  device: Device;
  timeoutMs: number;
}

export interface RunOutput {
  lhr: LighthouseResult;
  /** Wall time of the Lighthouse run, Chrome launch excluded. */
  lighthouseMs: number;
}

/** Runs one Lighthouse audit. The agent depends on this interface, not on Lighthouse. */
export interface AuditRunner {
  run(request: RunRequest): Promise<RunOutput>;
  close(): Promise<void>;
}

export interface LighthouseRunnerOptions {
  chromePath: string;
  chromeFlags: readonly string[];
  logger: Logger;
}

/**
 * Lighthouse in this process, one run at a time (Lighthouse cannot run twice at once in one
 * process), with a Chrome launched for the run and killed after it. Only the Chrome this
 * runner launched is ever killed.
 */
export function createLighthouseRunner({ chromePath, chromeFlags, logger }: LighthouseRunnerOptions): AuditRunner {
  let current: chromeLauncher.LaunchedChrome | null = null;
  let busy = false;

  async function run({ url, device, timeoutMs }: RunRequest): Promise<RunOutput> {
    if (busy) throw new RunFailure('INTERNAL', 'runner is busy: one Lighthouse run at a time', true);
    busy = true;
    let chrome: chromeLauncher.LaunchedChrome;
    try {
      chrome = await chromeLauncher.launch({ chromePath, chromeFlags: [...chromeFlags], logLevel: 'silent' });
    } catch (error) {
      busy = false;
      throw new RunFailure('BROWSER_FAILED', `Chrome did not start: ${(error as Error).message}`, true, { cause: error });
    }
    current = chrome;
    // Loaded on first use: Lighthouse takes about a second to import.
    const { default: lighthouse, desktopConfig } = await import('lighthouse');
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new RunFailure('RUN_TIMEOUT', `the run took longer than ${timeoutMs} ms`, true)), timeoutMs);
      });
      const flags = {
        port: chrome.port,
        output: 'json' as const,
        logLevel: 'error' as const,
        // The full-page screenshot costs about 1.5 s a run and is never stored.
        disableFullPageScreenshot: true,
      };
      const runnerResult = await Promise.race([lighthouse(url, flags, device === 'desktop' ? desktopConfig : undefined), timeout]);
      const lighthouseMs = performance.now() - started;
      if (!runnerResult) throw new RunFailure('LIGHTHOUSE_FAILED', 'Lighthouse returned no result', true);
      const lhr = lighthouseResultSchema.parse(runnerResult.lhr);
      if (lhr.runtimeError) {
        // A page that did not load is reported, not stored as if it had been measured.
        throw new RunFailure('PAGE_LOAD_FAILED', `${lhr.runtimeError.code}: ${lhr.runtimeError.message}`, false);
      }
      return { lhr, lighthouseMs };
    } catch (error) {
      if (error instanceof RunFailure) throw error;
      throw new RunFailure('LIGHTHOUSE_FAILED', (error as Error).message, true, { cause: error });
    } finally {
      clearTimeout(timer);
      await killChrome(chrome, logger);
      current = null;
      busy = false;
    }
  }

  async function close(): Promise<void> {
    if (current) await killChrome(current, logger);
  }

  return { run, close };
}

async function killChrome(chrome: chromeLauncher.LaunchedChrome, logger: Logger): Promise<void> {
  try {
    await chrome.kill();
  } catch (error) {
    logger.warn({ err: error, pid: chrome.pid }, 'could not kill Chrome');
  }
}

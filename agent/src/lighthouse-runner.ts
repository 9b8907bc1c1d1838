import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as chromeLauncher from 'chrome-launcher';
import type { Logger } from 'pino';
import {
  cpuMultiplierFor,
  type Device,
  type Flow,
  lighthouseResultSchema,
  type LighthouseResult,
  type PageAuth,
  type RunConditions,
  TargetRefused,
  type TargetGuard,
} from '@perfwatch/common';
import { captureRunArtifacts, type RunArtifacts } from './artifact-capture.ts';
import { openAuthenticatedPage, type AuthenticatedPage } from './authenticated-page.ts';
import { runFlow, type FlowStepResult } from './flow-runner.ts';
import { sampleBenchmarkIndex } from './cpu-benchmark.ts';
import type { GuardProxy } from './guard-proxy.ts';
import { hasExited, launchOwnChrome, type OwnChrome } from './own-chrome.ts';
import { watchOtherCpu } from './other-cpu-share.ts';
import { findRedirectLoop } from './redirect-probe.ts';
import { RunFailure } from './run-failure.ts';

export interface RunRequest {
  url: string;
  device: Device;
  timeoutMs: number;
  /**
   * The agent's calibrated benchmark index (cpu-baseline.ts), from which a mobile run's CPU
   * slowdown follows; null or absent: none could be measured (Lighthouse's default slowdown).
   */
  baselineBenchmarkIndex?: number | null;
  /** Cookies, headers and login steps for a page behind a login (authenticated-page.ts). */
  auth?: PageAuth;
  /** A user flow to run instead of a navigation of `url` (flow-runner.ts), every navigate with its URL. */
  flow?: Flow;
}

export interface RunOutput {
  lhr: LighthouseResult;
  /** Wall time of the Lighthouse run, Chrome launch excluded. */
  lighthouseMs: number;
  /**
   * What the runner knows of the run's conditions (the agent adds how busy it and its host
   * were); absent from runners that do not calibrate (test doubles).
   */
  conditions?: Omit<RunConditions, 'concurrentRuns' | 'overlappingRuns' | 'loadAverage'>;
  /** The run's requests and trace, gzipped and bounded (artifact-capture.ts); absent from test doubles. */
  artifacts?: RunArtifacts;
  /** A flow's run: each step's result in the flow's order; the first is also `lhr`. */
  steps?: Array<Omit<FlowStepResult, 'lhr'> & { lhr: LighthouseResult }>;
}

/**
 * How mobile runs slow the CPU down: `auto`, from the agent's benchmark index (RunRequest) by
 * Lighthouse's calculator (cpu-calibration.ts in common), so agents on different hardware
 * emulate the same phone; or a fixed multiplier.
 */
export interface CpuCalibration {
  multiplier: 'auto' | number;
}

/** Lighthouse's own mobile slowdown: what a run gets when no calibration could be made. */
const LIGHTHOUSE_MOBILE_MULTIPLIER = 4;

/** Makes one run: Lighthouse on a page. The agent depends on this interface, not on Lighthouse. */
export interface PageRunner {
  run(request: RunRequest): Promise<RunOutput>;
  /**
   * Readings of the machine's benchmark index in this runner's Chrome, outside any run (taken
   * as Lighthouse takes a run's own); absent from runners that do not calibrate (test doubles).
   */
  calibrate?(): Promise<number[]>;
  close(): Promise<void>;
}

export interface LighthouseRunnerOptions {
  chromePath: string;
  chromeFlags: readonly string[];
  logger: Logger;
  /**
   * Runs one Chrome serves before it is replaced (0: a fresh Chrome for every run). Between
   * runs Chrome stays up: Lighthouse opens a new tab for each run, resets the origin's storage
   * and closes the tab, so a warm Chrome measures like a cold one without the launch.
   */
  runsPerBrowser: number;
  /**
   * The safety net for the URLs users choose: the run's URL is checked before Chrome sees it,
   * and Chrome reaches everything through the guard proxy. Without it, anything is reachable.
   */
  guard?: { guard: TargetGuard; proxy: GuardProxy };
  cpu?: CpuCalibration;
}

/** The Chrome a runner has up: its process, its DevTools port, its profile. */
export interface ChromeInfo {
  pid: number;
  port: number;
  /** A profile directory of this Chrome's own, removed with it. */
  userDataDir: string;
}

export function createLighthouseRunner(options: LighthouseRunnerOptions): LighthouseRunner {
  return new LighthouseRunner(options);
}

/**
 * Lighthouse in this process, one run at a time (Lighthouse cannot run twice at once in one
 * process). Only the Chrome this runner launched is ever killed: by its own pid, after
 * `runsPerBrowser` runs, after a run that failed or timed out, and on close.
 */
export class LighthouseRunner implements PageRunner {
  readonly #options: LighthouseRunnerOptions;
  readonly #logger: Logger;
  #chrome: OwnChrome | null = null;
  #runsOnChrome = 0;
  #busy = false;

  constructor(options: LighthouseRunnerOptions) {
    this.#options = options;
    this.#logger = options.logger;
  }

  /** Null between Chromes (none launched yet, or the last one retired). */
  get chrome(): ChromeInfo | null {
    const chrome = this.#chrome;
    return chrome ? { pid: chrome.pid, port: chrome.port, userDataDir: chrome.userDataDir } : null;
  }

  readonly calibrate = async (): Promise<number[]> => {
    this.#claim();
    try {
      const browser = await this.#ensureChrome();
      return await sampleBenchmarkIndex(browser.port);
    } finally {
      this.#busy = false;
    }
  };

  readonly close = (): Promise<void> => this.#retire();

  readonly run = async (request: RunRequest): Promise<RunOutput> => {
    if (this.#busy) throw busyFailure();
    await this.#guardTarget(request.url);
    this.#claim();
    const { device, baselineBenchmarkIndex = null, auth } = request;
    const attempt: RunAttempt = { healthy: false, lighthouseRun: undefined, signedIn: undefined };
    // Credentials get a Chrome of their own, retired after the run: no other run, of another
    // project or user, ever shares a profile that held them.
    if (auth) await this.#retire();
    try {
      const browser = await this.#ensureChrome();
      const cpuMultiplier = device === 'desktop' ? 1 : this.#mobileMultiplier(baselineBenchmarkIndex);
      const { result, trace, steps, lighthouseMs, otherCpuShare } = await this.#lighthouse(
        browser,
        request,
        cpuMultiplier,
        attempt,
      );
      const lhr = lighthouseResultSchema.parse(result);
      const parsedSteps = steps?.map((step) => ({ ...step, lhr: lighthouseResultSchema.parse(step.lhr) }));
      attempt.healthy = true;
      await this.#refuseFailedLoad(request.url, lhr);
      return {
        lhr,
        ...(parsedSteps ? { steps: parsedSteps } : {}),
        lighthouseMs,
        artifacts: await captureRunArtifacts(result as Parameters<typeof captureRunArtifacts>[0], trace),
        conditions: { ...conditionsOf(lhr, baselineBenchmarkIndex, cpuMultiplier), otherCpuShare },
      };
    } finally {
      await this.#afterRun(attempt, Boolean(auth));
    }
  };

  /** The runner taken for one piece of work; `#afterRun` (or calibrate's end) gives it back. */
  #claim(): void {
    if (this.#busy) throw busyFailure();
    this.#busy = true;
  }

  #mobileMultiplier(baseline: number | null): number {
    const { multiplier } = this.#options.cpu ?? { multiplier: 'auto' };
    if (typeof multiplier === 'number') return multiplier;
    if (baseline === null) return LIGHTHOUSE_MOBILE_MULTIPLIER;
    // Slower than the emulated phone: no slowdown at all is the nearest this machine comes.
    return cpuMultiplierFor(baseline) ?? 1;
  }

  /** The run's URL checked before Chrome sees it; refusals left from an earlier run forgotten. */
  async #guardTarget(url: string): Promise<void> {
    const guard = this.#options.guard;
    if (!guard) return;
    try {
      await guard.guard.resolve(new URL(url).hostname);
    } catch (error) {
      if (error instanceof TargetRefused)
        throw new RunFailure(
          error.kind === 'unresolvable' ? 'PAGE_LOAD_FAILED' : 'TARGET_REFUSED',
          error.message,
          false,
        );
      throw error;
    }
    guard.proxy.takeRefusals();
  }

  /** Lighthouse on `browser`, signed in first when the run has credentials, given up at the run's timeout. */
  async #lighthouse(
    browser: chromeLauncher.LaunchedChrome,
    { url, device, timeoutMs, auth, flow }: RunRequest,
    cpuMultiplier: number,
    attempt: RunAttempt,
  ): Promise<LighthouseOutput> {
    // Loaded on first use: Lighthouse takes about a second to import.
    const { default: lighthouse, desktopConfig } = await import('lighthouse');
    const started = performance.now();
    const deadline = runDeadline(timeoutMs);
    const flags = {
      port: browser.port,
      output: 'json' as const,
      logLevel: 'error' as const,
      // The full-page screenshot costs about 1.5 s a run and is never stored.
      disableFullPageScreenshot: true,
      // Merged into the config's throttling: desktop's is 1 already, mobile's follows the calibration.
      ...(device === 'desktop' ? {} : { throttling: { cpuSlowdownMultiplier: cpuMultiplier } }),
    };
    try {
      attempt.signedIn = auth
        ? await Promise.race([openAuthenticatedPage(browser.port, url, auth), deadline.expired])
        : undefined;
      // With a signed-in tab Lighthouse runs in it, its cookies and header rules in place.
      const neighbours = await watchOtherCpu(browser.pid);
      if (flow) {
        const run = runFlow({
          port: browser.port,
          ...(attempt.signedIn ? { page: attempt.signedIn.page } : {}),
          flow,
          device,
          cpuMultiplier,
          ...(this.#options.guard ? { guard: this.#options.guard.guard } : {}),
        });
        attempt.lighthouseRun = run;
        const { steps, trace } = await Promise.race([run, deadline.expired]);
        const lighthouseMs = performance.now() - started;
        return { result: steps[0]!.lhr, trace, steps, lighthouseMs, otherCpuShare: await neighbours.stop() };
      }
      const run = lighthouse(url, flags, device === 'desktop' ? desktopConfig : undefined, attempt.signedIn?.page);
      attempt.lighthouseRun = run;
      const runnerResult = await Promise.race([run, deadline.expired]);
      if (!runnerResult) throw new RunFailure('LIGHTHOUSE_FAILED', 'Lighthouse returned no result', true);
      const lighthouseMs = performance.now() - started;
      return {
        result: runnerResult.lhr,
        trace: runnerResult.artifacts.Trace,
        lighthouseMs,
        otherCpuShare: await neighbours.stop(),
      };
    } catch (error) {
      if (error instanceof RunFailure) throw error;
      throw new RunFailure('LIGHTHOUSE_FAILED', (error as Error).message, true, { cause: error });
    } finally {
      deadline.clear();
    }
  }

  /**
   * A page that did not load is reported, not stored as if it had been measured: as refused
   * when the guard turned away where it led, with the redirect loop when Chrome showed one.
   */
  async #refuseFailedLoad(url: string, lhr: LighthouseResult): Promise<void> {
    const guard = this.#options.guard;
    const refused = [...new Set(guard?.proxy.takeRefusals() ?? [])];
    if (lhr.runtimeError && refused.length > 0) {
      throw new RunFailure(
        'TARGET_REFUSED',
        `the page led to ${refused.join(', ')}, which the agent may not reach (${lhr.runtimeError.code})`,
        false,
      );
    }
    if (refused.length > 0) this.#logger.warn({ target: { url, refused } }, 'subresources refused by the target guard');
    if (!lhr.runtimeError) return;
    const loop =
      lhr.runtimeError.code === 'CHROME_INTERSTITIAL_ERROR'
        ? await findRedirectLoop(url, { guard: guard?.guard })
        : null;
    throw new RunFailure(
      'PAGE_LOAD_FAILED',
      loop
        ? `${loop}; Chrome showed its error page (${lhr.runtimeError.code})`
        : `${lhr.runtimeError.code}: ${lhr.runtimeError.message}`,
      false,
    );
  }

  async #afterRun({ healthy, lighthouseRun, signedIn }: RunAttempt, hadCredentials: boolean): Promise<void> {
    await signedIn?.dispose();
    this.#runsOnChrome++;
    const { runsPerBrowser } = this.#options;
    // A Chrome that timed out or failed mid-run may hold a hung tab: it is not trusted again.
    if (!healthy || hadCredentials || runsPerBrowser === 0 || this.#runsOnChrome >= runsPerBrowser)
      await this.#retire();
    // A run given up on keeps going until its Chrome is gone: let it end before the next
    // run starts, since two Lighthouse runs cannot overlap in one process.
    if (!healthy && lighthouseRun)
      await Promise.race([
        lighthouseRun.catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 10_000).unref()),
      ]);
    this.#busy = false;
  }

  async #ensureChrome(): Promise<chromeLauncher.LaunchedChrome> {
    const current = this.#chrome;
    if (current && !hasExited(current)) return current;
    if (current) {
      this.#logger.warn({ pid: current.pid }, 'Chrome exited between runs; starting another');
      await this.#retire();
    }
    this.#chrome = await launchOwnChrome(this.#options);
    this.#runsOnChrome = 0;
    return this.#chrome;
  }

  async #retire(): Promise<void> {
    const old = this.#chrome;
    this.#chrome = null;
    if (!old) return;
    // chrome-launcher's kill() signals and returns: wait for the browser to be gone, so a
    // replacement never runs beside it (an agent keeps at most `capacity` Chromes).
    const exited = hasExited(old) ? Promise.resolve() : once(old.process, 'exit');
    try {
      await old.kill();
      if ((await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)])) === false)
        this.#logger.warn({ pid: old.pid }, 'Chrome has not exited 15 s after it was killed');
    } catch (error) {
      this.#logger.warn({ err: error, pid: old.pid }, 'could not kill Chrome');
    }
    await rm(old.userDataDir, { recursive: true, force: true });
  }
}

/** What Lighthouse made of a run, before it is read: its result and trace, a flow's steps, and its costs. */
interface LighthouseOutput {
  result: unknown;
  trace: unknown;
  steps?: FlowStepResult[];
  lighthouseMs: number;
  otherCpuShare: number | null;
}

/** Lighthouse cannot run twice at once in one process. */
const busyFailure = () => new RunFailure('INTERNAL', 'runner is busy: one Lighthouse run at a time', true);

/** What a run leaves for its clean-up: whether Chrome is still trusted, the Lighthouse run, the signed-in tab. */
interface RunAttempt {
  healthy: boolean;
  lighthouseRun: Promise<unknown> | undefined;
  signedIn: AuthenticatedPage | undefined;
}

/** A promise that fails with RUN_TIMEOUT after `timeoutMs`, and its clearing. */
function runDeadline(timeoutMs: number): { expired: Promise<never>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RunFailure('RUN_TIMEOUT', `the run took longer than ${timeoutMs} ms`, true)),
      timeoutMs,
    );
  });
  return { expired, clear: () => clearTimeout(timer) };
}

/** The run's conditions as Lighthouse saw them: the machine's benchmark index, Chrome's and Lighthouse's versions. */
function conditionsOf(
  lhr: LighthouseResult,
  baselineBenchmarkIndex: number | null,
  cpuMultiplier: number,
): NonNullable<RunOutput['conditions']> {
  const environment = (lhr['environment'] ?? {}) as { benchmarkIndex?: unknown; hostUserAgent?: unknown };
  return {
    benchmarkIndex: typeof environment.benchmarkIndex === 'number' ? Math.round(environment.benchmarkIndex) : null,
    baselineBenchmarkIndex,
    cpuMultiplier,
    chromeVersion:
      /(?:HeadlessChrome|Chrome|Chromium)\/([\d.]+)/.exec(String(environment.hostUserAgent ?? ''))?.[1] ?? 'unknown',
    lighthouseVersion: lhr.lighthouseVersion,
  };
}

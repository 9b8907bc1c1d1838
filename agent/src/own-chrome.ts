import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as chromeLauncher from 'chrome-launcher';
import type { GuardProxy } from './guard-proxy.ts';
import { markOwner, PROFILE_PREFIX } from './orphan-chrome.ts';
import { RunFailure } from './run-failure.ts';

/** A Chrome this agent launched, with the profile directory that is its own and goes with it. */
export type OwnChrome = chromeLauncher.LaunchedChrome & { userDataDir: string };

export const hasExited = (chrome: chromeLauncher.LaunchedChrome) =>
  chrome.process.exitCode !== null || chrome.process.signalCode !== null;

/** A Chrome in a profile directory of its own, reaching pages through the guard proxy when there is one. */
export async function launchOwnChrome({
  chromePath,
  chromeFlags,
  guard,
}: {
  chromePath: string;
  chromeFlags: readonly string[];
  guard?: { proxy: Pick<GuardProxy, 'url'> } | undefined;
}): Promise<OwnChrome> {
  const userDataDir = await mkdtemp(join(tmpdir(), PROFILE_PREFIX));
  // Written before Chrome starts: if this process dies, the next agent knows the Chrome is an orphan.
  await markOwner(userDataDir);
  try {
    // Chrome bypasses proxies for loopback unless told `<-loopback>`.
    const proxyFlags = guard ? [`--proxy-server=${guard.proxy.url}`, '--proxy-bypass-list=<-loopback>'] : [];
    const launched = await chromeLauncher.launch({
      chromePath,
      chromeFlags: [...chromeFlags, ...proxyFlags],
      userDataDir,
      logLevel: 'silent',
    });
    return Object.assign(launched, { userDataDir });
  } catch (error) {
    await rm(userDataDir, { recursive: true, force: true });
    throw new RunFailure('BROWSER_FAILED', `Chrome did not start: ${(error as Error).message}`, true, { cause: error });
  }
}

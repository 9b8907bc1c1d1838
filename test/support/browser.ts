import { chromium, type Browser, type Page } from 'playwright-core';

/** Nothing but the page under test reaches the network, and no first-run or sync screens. */
const QUIET_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Debian's chromium (or CHROME_PATH) driven by playwright-core; `args` are added to the quiet defaults. */
export function launchBrowser({ args = [] }: { args?: readonly string[] } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env['CHROME_PATH'] ?? '/usr/bin/chromium',
    args: [...QUIET_ARGS, ...args],
  });
}

/** A desktop-sized page whose script errors, CSP violations and console errors are pushed to `problems`. */
export async function watchedPage(browser: Browser, problems: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  return page;
}

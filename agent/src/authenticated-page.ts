import puppeteer, { type Browser, type CDPSession, type Page } from 'puppeteer-core';
import type { LoginStep, PageAuth } from '@perfwatch/common';
import { RunFailure } from './run-failure.ts';

/**
 * A tab of the run's Chrome set up to get past the page's login, for Lighthouse to run in:
 * the cookies set for the page's origin only (Chrome then sends them nowhere else), the extra
 * headers added to the origin's requests only (the Fetch domain pauses those and nothing else),
 * and the login script run in it first. What it holds is a secret: no step's value or header
 * ever goes into an error message or a log line.
 */
export interface AuthenticatedPage {
  page: Page;
  /** Leaves the browser as it is (the runner retires a Chrome that held credentials). */
  dispose(): Promise<void>;
}

const STEP_TIMEOUT_MS = 15_000;

function describe(step: LoginStep, index: number): string {
  // The step without its value: a password must not reach a failure message.
  return `login step ${index + 1} (${step.action}${'selector' in step ? ` ${step.selector}` : ''}${step.action === 'goto' ? ` ${new URL(step.url).origin}${new URL(step.url).pathname}` : ''})`;
}

/** How long a click gets to start a navigation (a form's submit, a link) before it counts as staying on the page. */
const NAVIGATION_START_MS = 1_000;

/**
 * Resolves once a navigation of the main frame that began within the window has loaded, or at
 * once if none began: the step after a submit then starts on the page the submit led to, not on
 * the form it left (where a `waitFor h1` would match the login page's own heading).
 */
function settleNavigation(page: Page): { armed: Promise<void>; dispose(): void } {
  let started = false;
  const onRequest = (request: { isNavigationRequest(): boolean; frame(): unknown }) => {
    if (request.isNavigationRequest() && request.frame() === page.mainFrame()) started = true;
  };
  page.on('request', onRequest);
  const loaded = page.waitForNavigation({ waitUntil: 'load', timeout: STEP_TIMEOUT_MS }).then(() => undefined);
  loaded.catch(() => undefined);
  const armed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => (started ? loaded.then(resolve, reject) : resolve()), NAVIGATION_START_MS);
    loaded.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => undefined,
    );
  });
  return { armed, dispose: () => page.off('request', onRequest) };
}

/** Errors of a page that navigated while a step looked at it: the step looks again on the new page. */
function isNavigationRace(error: unknown): boolean {
  return /context was destroyed|frame (got|was) detached|Cannot find context|navigat/i.test(
    (error as Error).message ?? '',
  );
}

/** A `fill` that found the page on another origin than the one it is meant for: it typed nothing. */
class ElsewhereError extends Error {
  readonly at: string;
  readonly meant: string;
  constructor(at: string, meant: string) {
    super(`the page is at ${at}, not ${meant}`);
    this.name = 'ElsewhereError';
    this.at = at;
    this.meant = meant;
  }
}

/** The origin of the document the main frame holds now, as the browser reported its last navigation. */
const originNow = (page: Page): string => new URL(page.url()).origin;

/**
 * Types a step's value into its field, only while the page is of the origin it is meant for.
 * The field is found first and the origin checked after, on the page that holds it; the value
 * then goes to that field alone: should the page navigate meanwhile, the field is gone and the
 * step fails, where a fresh look-up would find the same selector on the next page (another
 * origin's copy of the form, say). Checked again once typed, so the steps stop there.
 */
async function fillOnItsOrigin(page: Page, step: Extract<LoginStep, { action: 'fill' }>, meant: string): Promise<void> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  const left = () => Math.max(1, deadline - Date.now());
  const field = await page.locator(step.selector).setTimeout(left()).waitHandle();
  try {
    if (originNow(page) !== meant) throw new ElsewhereError(originNow(page), meant);
    await field.asLocator().setTimeout(left()).fill(step.value);
    if (originNow(page) !== meant) throw new ElsewhereError(originNow(page), meant);
  } finally {
    await field.dispose().catch(() => undefined);
  }
}

/** `expected`: the origin a fill without its own is meant for (the last goto's, else the project's). */
async function runStep(page: Page, step: LoginStep, expected: string): Promise<void> {
  switch (step.action) {
    case 'goto':
      await page.goto(step.url, { waitUntil: 'load', timeout: STEP_TIMEOUT_MS });
      return;
    case 'fill':
      await fillOnItsOrigin(page, step, step.origin ? new URL(step.origin).origin : expected);
      return;
    case 'click': {
      const navigation = settleNavigation(page);
      try {
        await page.locator(step.selector).setTimeout(STEP_TIMEOUT_MS).click();
        await navigation.armed;
      } finally {
        navigation.dispose();
      }
      return;
    }
    case 'waitFor': {
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      for (;;) {
        try {
          await page.waitForSelector(step.selector, { timeout: Math.max(1, deadline - Date.now()) });
          return;
        } catch (error) {
          if (!isNavigationRace(error) || Date.now() >= deadline) throw error;
        }
      }
    }
  }
}

/** Sets the cookies for the origin's host: Chrome sends them to that site only, as its own cookies. */
async function setOriginCookies(session: CDPSession, origin: string, cookies: PageAuth['cookies']): Promise<void> {
  for (const { name, value } of cookies ?? []) {
    await session.send('Network.setCookie', {
      name,
      value,
      url: origin,
      httpOnly: true,
      secure: origin.startsWith('https:'),
      sameSite: 'Lax',
    });
  }
}

/** Adds the extra headers to the origin's requests only (the Fetch domain pauses those and nothing else). */
async function addOriginHeaders(session: CDPSession, origin: string, headers: PageAuth['headers']): Promise<void> {
  const extra = Object.entries(headers ?? {});
  if (extra.length === 0) return;
  const names = new Set(extra.map(([name]) => name.toLowerCase()));
  session.on(
    'Fetch.requestPaused',
    (event: { requestId: string; request: { url: string; headers: Record<string, string> } }) => {
      // The pattern already limits pausing to the origin; checked again on the parsed URL.
      const own = new URL(event.request.url).origin === origin;
      const headers = own
        ? [...Object.entries(event.request.headers).filter(([name]) => !names.has(name.toLowerCase())), ...extra].map(
            ([name, value]) => ({ name, value }),
          )
        : undefined;
      session
        .send('Fetch.continueRequest', { requestId: event.requestId, ...(headers ? { headers } : {}) })
        .catch(() => undefined);
    },
  );
  await session.send('Fetch.enable', { patterns: [{ urlPattern: `${origin}/*`, requestStage: 'Request' }] });
}

/** Runs the login script in the tab, each failure named by its step (never by its value). */
async function runLogin(page: Page, origin: string, login: PageAuth['login']): Promise<void> {
  // What a fill types into: the page its step names, else the last goto's, else the project's.
  let expected = origin;
  for (const [index, step] of (login ?? []).entries()) {
    try {
      await runStep(page, step, expected);
    } catch (error) {
      // A value meant for one site must never reach another (a login page that redirects away).
      if (error instanceof ElsewhereError)
        throw new RunFailure(
          'LOGIN_ORIGIN_MISMATCH',
          `${describe(step, index)} refused: ${error.message}, the origin it is meant for (give the step its origin if the sign-in is there)`,
          false,
        );
      const reason = (error as Error).name === 'TimeoutError' ? 'timed out' : 'failed';
      throw new RunFailure('PAGE_LOAD_FAILED', `${describe(step, index)} ${reason}`, false);
    }
    if (step.action === 'goto') expected = new URL(step.url).origin;
  }
}

export async function openAuthenticatedPage(port: number, url: string, auth: PageAuth): Promise<AuthenticatedPage> {
  const origin = new URL(url).origin;
  const browser: Browser = await puppeteer.connect({ browserURL: `http://127.0.0.1:${port}`, defaultViewport: null });
  try {
    const page = await browser.newPage();
    const session = await page.createCDPSession();
    await setOriginCookies(session, origin, auth.cookies);
    await addOriginHeaders(session, origin, auth.headers);
    await runLogin(page, origin, auth.login);
    return {
      page,
      async dispose() {
        await browser.disconnect().catch(() => undefined);
      },
    };
  } catch (error) {
    await browser.disconnect().catch(() => undefined);
    throw error;
  }
}

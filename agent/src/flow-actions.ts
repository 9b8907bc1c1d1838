import type { KeyInput, Page } from 'puppeteer-core';
import { DEFAULT_WAIT_MS, type FlowAction } from '@perfwatch/common';

/**
 * A flow's actions as the browser's own input: Puppeteer's locators find the element (by CSS,
 * or by the text it shows through Puppeteer's `::-p-text` query), wait until it is there,
 * visible and still, and then click it, type into it, press keys or turn the wheel. Nothing the
 * flow's author wrote runs as script in the page.
 */

/** The element an action names, as a locator that gives up after `timeoutMs`. */
function locate(page: Page, action: { selector?: string | undefined; text?: string | undefined }, timeoutMs: number) {
  const query = action.selector ?? `::-p-text(${cssString(action.text!)})`;
  return page.locator(query).setTimeout(timeoutMs);
}

/** A CSS string literal: Puppeteer's text query reads its argument as one. */
const cssString = (text: string): string => `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** The wheel's move when a `scroll` names neither an element nor a distance: about a screen. */
const DEFAULT_SCROLL_PX = 600;

/** Takes one action on the page; `timeoutMs` bounds its look for the element. */
export async function takeAction(page: Page, action: FlowAction, timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
  switch (action.action) {
    case 'click':
      await locate(page, action, timeoutMs).click();
      return;
    case 'type': {
      const field = await locate(page, action, timeoutMs).waitHandle();
      try {
        // A flow's values are not secrets (stored as given, shown to the project's readers, sent to
        // every location): a password goes in the project's credentials, whose login runs first.
        if ((await field.evaluate((element: unknown) => (element as { type?: unknown }).type)) === 'password')
          throw new Error(
            "a flow types no password: its values are not secret; sign in with the project's credentials (docs/flows.md)",
          );
        await field.asLocator().setTimeout(timeoutMs).fill(action.value);
      } finally {
        await field.dispose();
      }
      return;
    }
    case 'press':
      if (action.selector !== undefined || action.text !== undefined) await focus(page, action, timeoutMs);
      await page.keyboard.press(action.key as KeyInput);
      return;
    case 'scroll':
      if (action.selector !== undefined || action.text !== undefined) {
        const element = await locate(page, action, timeoutMs).waitHandle();
        try {
          await element.scrollIntoView();
        } finally {
          await element.dispose();
        }
        return;
      }
      await page.mouse.wheel({ deltaY: action.y ?? DEFAULT_SCROLL_PX });
      return;
    case 'waitFor':
      await (await locate(page, action, action.timeoutMs ?? timeoutMs).waitHandle()).dispose();
      return;
    case 'select': {
      const element = await locate(page, action, timeoutMs).waitHandle();
      try {
        const chosen = await element.select(action.value);
        // Not the value itself: a flow's values stay out of messages, as a typed one would.
        if (chosen.length === 0) throw new Error('no option has the value given');
      } finally {
        await element.dispose();
      }
      return;
    }
  }
}

async function focus(page: Page, action: { selector?: string; text?: string }, timeoutMs: number): Promise<void> {
  const element = await locate(page, action, timeoutMs).waitHandle();
  try {
    await element.focus();
  } finally {
    await element.dispose();
  }
}

/** How long a timespan waits, after its last action, for a frame and then for the network to fall quiet (each at most). */
const SETTLE_MAX_MS = 5_000;

/**
 * Lets the last action's work end before the timespan does: a frame painted after it (the
 * handler has run and its result is on screen, which INP measures up to), then the network
 * quiet for half a second; each waited for SETTLE_MAX_MS at most, since a page whose script
 * never yields would otherwise hold the frame's wait until the DevTools call times out.
 */
export async function settle(page: Page): Promise<void> {
  // Perfwatch's own script, not the flow's: two frames, the second after the first is painted.
  const painted = page.evaluate(
    'new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve())))',
  );
  painted.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const given = new Promise((resolve) => (timer = setTimeout(resolve, SETTLE_MAX_MS)));
  await Promise.race([painted, given]).finally(() => clearTimeout(timer));
  await page.waitForNetworkIdle({ idleTime: 500, timeout: SETTLE_MAX_MS }).catch(() => undefined);
}

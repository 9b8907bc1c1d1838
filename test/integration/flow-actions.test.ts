import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromeFlags } from '@perfwatch/agent';
import { settle, takeAction } from '../../agent/src/flow-actions.ts';

// A flow's actions (agent/src/flow-actions.ts) in a real Chromium, on pages set up with
// setContent: what they find by text, what their failures say, and how long a hostile page
// can hold the wait after a timespan's last action.

let browser: Browser;
let page: Page;

beforeAll(async () => {
  browser = await puppeteer.launch({
    executablePath: process.env['CHROME_PATH'] ?? '/usr/bin/chromium',
    args: chromeFlags({ noSandbox: process.getuid?.() === 0 }),
    headless: true,
  });
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
});

describe("a flow's actions", () => {
  it('find an element by a text holding quotes, a backslash and a parenthesis, and nothing else', async () => {
    const text = String.raw`Say "hi") \ , ::-p-xpath(//a`;
    await page.setContent(`<button id="decoy">Say</button><button id="it"></button><p id="out"></p>
<script>
  document.getElementById('it').textContent = ${JSON.stringify(text)};
  for (const b of document.querySelectorAll('button')) b.onclick = () => { document.getElementById('out').textContent = b.id; };
</script>`);
    await takeAction(page, { action: 'click', text }, 5_000);
    expect(await page.$eval('#out', (p) => p.textContent)).toBe('it');
  });

  it('say which select had no such option without the value asked for (a flow value stays out of messages)', async () => {
    await page.setContent('<select id="plan"><option value="a">A</option></select>');
    const failure = takeAction(page, { action: 'select', selector: '#plan', value: 'hunter2-secret' }, 5_000);
    await expect(failure).rejects.toThrow(/no option/);
    await expect(failure).rejects.not.toThrow(/hunter2/);
  });

  it('type into a field, and refuse a password field without typing (a flow value is not a secret)', async () => {
    await page.setContent('<input id="q"><input id="pw" type="password">');
    await takeAction(page, { action: 'type', selector: '#q', value: 'trail pack' }, 5_000);
    expect(await page.$eval('#q', (input) => (input as unknown as { value: string }).value)).toBe('trail pack');
    const refused = takeAction(page, { action: 'type', selector: '#pw', value: 'hunter2-secret' }, 5_000);
    await expect(refused).rejects.toThrow(/a flow types no password/);
    await expect(refused).rejects.not.toThrow(/hunter2/);
    expect(await page.$eval('#pw', (input) => (input as unknown as { value: string }).value)).toBe('');
  });

  it("wait at most their bound for a frame after the last action, however long the page's script runs", async () => {
    const blockMs = 20_000;
    await page.setContent(`<p>busy</p><script>
  setTimeout(() => { const end = performance.now() + ${blockMs}; while (performance.now() < end); }, 200);
</script>`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = performance.now();
    await settle(page);
    const took = performance.now() - started;
    // The bound is 5 s for the frame and 5 s for the network: well under the page's block.
    expect(took).toBeLessThan(blockMs * 0.6);
  }, 60_000);
});

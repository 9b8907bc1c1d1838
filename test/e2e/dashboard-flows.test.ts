import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditResultSchema, formatApiDateTime, overviewResponseSchema, type LocationResult } from '@perfwatch/common';
import { launchBrowser, watchedPage } from '../support/browser.ts';
import { seedFlowSnapshot } from '../support/flow-snapshots.ts';
import { loadFlowSteps } from '../support/lhr-fixtures.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Issue 36's flows in the dashboard, in a real Chromium against a real gateway: a flow project's
// snapshots hold the real flow fixture (product / add to cart / cart, a Lighthouse 13 user flow
// of the fixture site on desktop), built by the gateway's own snapshot builder and stored as an
// update stores them (test/e2e/user-flows.test.ts measures flows with a real agent). The page
// draws the steps, Lighthouse's own flow report, the flow editor's refusals, and INP per step.

const ARTEFACTS = join(import.meta.dirname, '../../test-results/dashboard');
const CART = `${inject('siteUrl')}cart.html?work=120`;
const DAY = 86_400_000;
const STEPS = loadFlowSteps();

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let token: string;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** The two snapshots' dates as the API names them, older first. */
const dates: string[] = [];

async function api(method: string, path: string, params: Record<string, unknown>): Promise<Response> {
  const query = method === 'GET' || method === 'DELETE';
  return fetch(`${gateway.url}/v1/${path}${query ? `?${new URLSearchParams(params as Record<string, string>)}` : ''}`, {
    method,
    headers: { Authorization: token, 'Content-Type': 'application/json' },
    ...(query ? {} : { body: JSON.stringify(params) }),
  });
}

async function latestCell(): Promise<LocationResult> {
  const res = await api('GET', 'audit', { url: CART, date: dates.at(-1)!, device: 'desktop' });
  expect(res.status).toBe(200);
  return auditResultSchema.parse(await res.json()).desktop!.london!;
}

/** What a test reads of an <img>: whether it decodes, and how wide it is then. */
type DecodedImage = { decode(): Promise<void>; naturalWidth: number };

/** What the page shows of a duration, as dom.js formats it. */
const shownMs = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

beforeAll(async () => {
  await mkdir(ARTEFACTS, { recursive: true });
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url });
  ({ token } = await gateway.admin.createUser('ada'));
  const project = await gateway.admin.addProject('ada', CART, { locations: ['london'] });
  const second = Math.floor(Date.now() / 1000) * 1000;
  for (const [i, days] of [2, 1].entries()) {
    const date = new Date(second - days * DAY);
    await seedFlowSnapshot(gateway.store, project, { updateId: `flow-update-${i}`, date });
    dates.push(formatApiDateTime(date));
  }
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
  await page.goto(`${gateway.url}/`);
  await page.fill('#token', token);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('.projects');
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await nats?.dispose();
});

describe('a flow snapshot in the dashboard', () => {
  it('draws the steps in order: kind, name, metrics and filmstrip', async () => {
    const cell = await latestCell();
    await page.goto(`${gateway.url}/#/snapshot?${new URLSearchParams({ url: CART, date: dates.at(-1)! })}`);
    await page.waitForSelector('.flow-step');
    const steps = await page.$$eval('.flow-step', (items) =>
      items.map((li) => `${li.getAttribute('data-kind')} ${li.querySelector('.step-name')!.textContent}`),
    );
    expect(steps).toEqual(['navigate product', 'timespan add to cart', 'snapshot cart']);

    // The timespan's lab INP, as the API answers it (the fixture's 134.6 ms), with its TBT.
    const timespan = cell.steps![1]!;
    const inp = timespan.runs[timespan.median - 1]!.inp!;
    expect(inp).toBeCloseTo(134.6, 1);
    const at = '.flow-step[data-step="add to cart"]';
    expect(await page.textContent(`${at} dd[data-metric="inp"]`)).toBe(shownMs(inp));
    expect(await page.textContent(`${at} dd[data-metric="tbt"]`)).toBe(
      shownMs(timespan.runs[timespan.median - 1]!.tbt!),
    );
    // The navigation's load metrics and score; the snapshot's category scores.
    const product = cell.steps![0]!.runs[0]!;
    expect(await page.textContent('.flow-step[data-step="product"] dd[data-metric="lcp"]')).toBe(shownMs(product.lcp!));
    expect(
      await page.getAttribute('.flow-step[data-step="product"] [data-category="performance"] .score', 'data-score'),
    ).toBe(String(product.performance));
    const cart = cell.steps![2]!.runs[0]!;
    for (const category of ['accessibility', 'best-practices', 'seo'])
      expect(
        await page.getAttribute(`.flow-step[data-step="cart"] [data-category="${category}"] .score`, 'data-score'),
      ).toBe(String(cart.scores[category]));

    // Each step's thumbnails, drawn (decoded by the browser), in the step's own order.
    for (const step of STEPS) {
      const frames = (step.lhr.audits['screenshot-thumbnails']?.details as { items: unknown[] } | undefined)?.items;
      const drawn = await page.$$eval(`.flow-step[data-step="${step.name}"] .filmstrip img`, (imgs) =>
        Promise.all(
          (imgs as unknown as DecodedImage[]).map((img) =>
            img.decode().then(
              () => img.naturalWidth > 0,
              () => false,
            ),
          ),
        ),
      );
      expect(drawn, step.name).toEqual((frames ?? []).map(() => true));
    }
    await page.locator('.flow-steps').screenshot({ path: join(ARTEFACTS, 'flow-steps.png') });
    expect(STEPS.filter((s) => s.kind !== 'snapshot').every((s) => s.lhr.audits['screenshot-thumbnails'])).toBe(true);
    expect(problems).toEqual([]);
  });

  it("opens Lighthouse's own flow report, drawn by its renderer under the dashboard's policy", async () => {
    await page.click('.flow-report-link');
    await page.waitForSelector('.SummaryFlowStep__link');
    expect(await page.$$eval('.SummaryFlowStep__link', (links) => links.map((a) => a.textContent))).toEqual(
      STEPS.map((s) => s.name),
    );
    // The timespan's own report: its INP as Lighthouse displays it.
    await page.click('.SummaryFlowStep__link >> text="add to cart"');
    const metric = page.locator('.lh-metric#interaction-to-next-paint .lh-metric__value');
    await metric.waitFor();
    expect(await metric.textContent()).toBe(STEPS[1]!.lhr.audits['interaction-to-next-paint']!.displayValue);
    expect(await page.isVisible('#flow-report-status')).toBe(false);
    // Its "Save" would write this page, which draws nothing away from the gateway: not offered.
    expect(await page.isVisible('.Topbar__title')).toBe(true);
    const save = page.locator('.TopbarButton', { hasText: 'Save' });
    expect(await save.count()).toBe(1);
    expect(await save.isVisible()).toBe(false);
    // Its filmstrips drawn: every frame decoded, none an invalid URL.
    const frames = await page.$$eval('main img', (imgs) =>
      Promise.all(
        (imgs as unknown as DecodedImage[]).map((img) =>
          img.decode().then(
            () => img.naturalWidth > 0,
            () => false,
          ),
        ),
      ),
    );
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.filter((drawn) => !drawn)).toEqual([]);
    await page.screenshot({ path: join(ARTEFACTS, 'flow-report.png') });
    // No script error and no CSP violation (Chromium logs those as console errors).
    expect(problems).toEqual([]);
  });
});

describe("a flow project's settings and trends", () => {
  it('edits the flow as JSON: a refusal naming its step under it, then saved and removed', async () => {
    await page.goto(`${gateway.url}/#/project/settings?${new URLSearchParams({ url: CART })}`);
    await page.waitForSelector('#flow-json');
    expect(await page.inputValue('#flow-json')).toBe('');
    const bad = {
      steps: [
        { kind: 'navigate', name: 'product' },
        { kind: 'timespan', name: 'add to cart', actions: [{ action: 'hover', text: 'Add to cart' }] },
      ],
    };
    await page.fill('#flow-json', JSON.stringify(bad));
    await page.click('#flow-form button[type=submit]');
    await page.waitForSelector('#flow-errors li');
    const lines = await page.$$eval('#flow-errors li', (items) => items.map((li) => li.textContent));
    expect(lines.join('\n')).toMatch(/step 2 "add to cart": action 1: unknown action "hover"/);

    const good = { steps: [bad.steps[0], { kind: 'snapshot', name: 'cart' }] };
    await page.fill('#flow-json', JSON.stringify(good));
    await page.click('#flow-form button[type=submit]');
    await page.locator('#flow-state', { hasText: 'Flow saved.' }).waitFor();
    expect(await page.isHidden('#flow-errors')).toBe(true);
    expect(((await (await api('GET', 'projects/flow', { url: CART })).json()) as { flow: unknown }).flow).toEqual(good);
    expect(JSON.parse(await page.inputValue('#flow-json'))).toEqual(good);

    await page.click('#flow-remove');
    await page.locator('#flow-state', { hasText: 'Flow removed' }).waitFor();
    expect(((await (await api('GET', 'projects/flow', { url: CART })).json()) as { flow: unknown }).flow).toBeNull();
    expect(await page.inputValue('#flow-json')).toBe('');
    // Chromium logs the answers the page expects as errors: the refusal, and the repository link (none).
    expect(problems.splice(0).sort()).toEqual([
      'console: Failed to load resource: the server responded with a status of 400 (Bad Request)',
      'console: Failed to load resource: the server responded with a status of 404 (Not Found)',
    ]);
  });

  it("plots each step's records, and the timespan's INP over Core Web Vitals' bands", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.now() - 3 * DAY).toISOString().slice(0, 10);
    const res = await api('GET', 'overview', { startDate: from, endDate: today, section: 'lighthouse' });
    const records = overviewResponseSchema
      .parse(await res.json())
      .filter((r) => r.url === CART && r.kpi === 'performance');
    expect(records.map((r) => r.step)).toEqual(['product', 'add to cart', 'cart', 'product', 'add to cart', 'cart']);

    await page.goto(`${gateway.url}/#/project?${new URLSearchParams({ url: CART })}`);
    await page.waitForSelector('figure[data-kpi="inp"] svg');
    // A line per step where the step has the number: a performance score for the navigation only
    // (Lighthouse counts a timespan's and a snapshot's passed audits), accessibility where a page was
    // looked at whole, TBT where the main thread was watched.
    const seriesOf = (kpi: string) =>
      page.$$eval(`figure[data-kpi="${kpi}"] circle`, (circles) =>
        [...new Set(circles.map((c) => c.getAttribute('data-series')))].sort(),
      );
    const line = (step: string) => `desktop/london · ${step}`;
    expect(await seriesOf('performance')).toEqual([line('product')]);
    expect(await seriesOf('accessibility')).toEqual([line('cart'), line('product')]);
    expect(await seriesOf('tbt')).toEqual([line('add to cart'), line('product')]);

    // INP: the timespan's line only (navigations and snapshots have none), at the records' values.
    const points = await page.$$eval('figure[data-kpi="inp"] circle', (circles) =>
      circles.map((c) => ({
        series: c.getAttribute('data-series'),
        value: Number(c.getAttribute('data-value')),
        cy: Number(c.getAttribute('cy')),
      })),
    );
    const inps = records.filter((r) => r.step === 'add to cart').map((r) => (r.data as { inp: number }).inp);
    expect(points.map((p) => `${p.series} ${p.value}`)).toEqual(inps.map((v) => `desktop/london · add to cart ${v}`));
    const bands = await page.$$eval('figure[data-kpi="inp"] rect.band', (rects) =>
      rects.map((r) => ({
        band: r.getAttribute('data-band'),
        top: Number(r.getAttribute('y')),
        bottom: Number(r.getAttribute('y')) + Number(r.getAttribute('height')),
        title: r.querySelector('title')!.textContent,
      })),
    );
    expect(bands.map((b) => b.title)).toEqual([
      'good: 0 ms–200 ms',
      'needs improvement: 200 ms–500 ms',
      expect.stringMatching(/^poor: 500 ms–/),
    ]);
    await page.locator('figure[data-kpi="inp"]').screenshot({ path: join(ARTEFACTS, 'flow-inp-trend.png') });
    // 134.6 ms is good: each point is drawn inside the good band.
    const good = bands[0]!;
    for (const point of points) {
      expect(point.cy).toBeGreaterThan(good.top);
      expect(point.cy).toBeLessThan(good.bottom);
    }
    expect(problems).toEqual([]);
  });
});

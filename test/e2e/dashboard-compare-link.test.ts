import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { compareViewLink, type CompareResult } from '@perfwatch/common';
import { launchBrowser, watchedPage } from '../support/browser.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// The stable link a commit status points to (common's compareViewLink), opened in a real
// Chromium (playwright-core driving Debian's chromium) as a reviewer would: not signed in yet,
// a preview's URL against production's. Set up as dashboard.test.ts is: a real gateway,
// nats-server and MongoDB-wire server, an agent answering with captured Lighthouse results.

const ARTEFACTS = join(import.meta.dirname, '../../test-results/dashboard');
const SHOP = 'https://shop.example/';
const PREVIEW = 'https://pr-12.preview.shop.example/';
const MAIN = '3f9c2a1d'.repeat(5);
const HEAD = 'c0ffee00'.repeat(5);

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let token: string;
let client: ApiClient;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** Each project's snapshot dates, oldest first. */
const dates: Record<string, string[]> = {};

beforeAll(async () => {
  await mkdir(ARTEFACTS, { recursive: true });
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url });
  agentConn = await connect({ servers: nats.url });
  // The preview's page is slower: every run of it paints its largest content 500 ms later.
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({
      delayMs: 5,
      change: (lhr) => {
        if (lhr.requestedUrl === PREVIEW) lhr.audits['largest-contentful-paint']!.numericValue! += 500;
      },
    }),
    logger: silentLogger,
    agentId: 'london',
  });
  ({ token } = await gateway.admin.createUser('rita'));
  for (const url of [SHOP, PREVIEW]) await gateway.admin.addProject('rita', url, { locations: ['london'], runs: 4 });
  client = createApiClient({ server: gateway.url, token });
  // Production from main, the preview from pull request 12.
  for (const url of [SHOP, SHOP]) await client.update({ url, device: 'mobile', branch: 'main', commit: MAIN });
  await client.update({ url: PREVIEW, device: 'mobile', branch: 'faster-images', commit: HEAD, pullRequest: 12 });
  for (const url of [SHOP, PREVIEW]) dates[url] = (await client.updates(url)).mobile!.map((d) => d.date);
  browser = await launchBrowser();
  // Script errors and CSP violations show up in problems; the page must have none.
  page = await watchedPage(browser, problems);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

const text = async (selector: string) => (await page.textContent(selector))?.trim();

/** What the view says of one side: its project, its snapshot's date and where that date links. */
async function side(name: 'from' | 'to') {
  const at = `p.compare-side[data-snapshot="${name}"]`;
  return {
    url: await text(`${at} a.side-url`),
    date: await text(`${at} a.side-date`),
    href: await page.getAttribute(`${at} a.side-date`, 'href'),
  };
}

/** The metrics of the view's card of mobile in London, as /v1/compare answered them. */
async function expectMetricsOf(expected: CompareResult): Promise<void> {
  const [cell] = expected.cells;
  const card = 'article.cell[data-device="mobile"][data-location="london"]';
  for (const metric of cell!.metrics.filter((m) => ['lcp', 'fcp', 'tbt'].includes(m.metric))) {
    const row = `${card} tr[data-metric="${metric.metric}"]`;
    expect(await text(`${row} td[data-side="from"]`)).toBe(`${Math.round(metric.from!)} ms`);
    expect(await text(`${row} td[data-side="to"]`)).toBe(`${Math.round(metric.to!)} ms`);
  }
}

describe("the dashboard's compare link", () => {
  it('opens after sign-in on the compare view of both URLs, latest on both sides', async () => {
    const link = compareViewLink(gateway.url, {
      url: PREVIEW,
      baseUrl: SHOP,
      from: 'latest',
      to: 'latest',
      device: 'mobile',
      location: 'london',
    });
    await page.goto(link);
    // A reviewer following a status link signs in first; the link is still where it goes.
    await page.fill('#token', token);
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('table.compare');
    expect(page.url()).toBe(link);
    const [base, head] = [dates[SHOP]!.at(-1)!, dates[PREVIEW]!.at(-1)!];
    expect(await side('from')).toEqual({
      url: SHOP,
      date: base,
      href: `#/snapshot?${new URLSearchParams({ url: SHOP, date: base })}`,
    });
    expect(await side('to')).toEqual({
      url: PREVIEW,
      date: head,
      href: `#/snapshot?${new URLSearchParams({ url: PREVIEW, date: head })}`,
    });
    expect(await text('h1')).toBe(`${SHOP} → ${PREVIEW}`);
    // Each side's code change, as the updates were given them; the preview's is a pull request's.
    const from = 'p.compare-side[data-snapshot="from"]';
    const to = 'p.compare-side[data-snapshot="to"]';
    expect(await text(`${from} .revision`)).toBe('branch main · commit 3f9c2a1');
    expect(await page.getAttribute(`${from} code[data-commit]`, 'title')).toBe(MAIN);
    expect(await page.$(`${from} .badge-pr`)).toBeNull();
    expect(await text(`${to} .revision`)).toBe('branch faster-images · commit c0ffee0 · PR #12 from pull request');
    expect(await page.getAttribute(`${to} .badge-pr`, 'data-pull-request')).toBe('12');
    const expected = await client.compare({ url: PREVIEW, baseUrl: SHOP, from: 'latest', to: 'latest' });
    expect(expected).toMatchObject({ baseUrl: SHOP, from: base, to: head });
    await expectMetricsOf(expected);
    // Four runs a side, every preview run slower: beyond noise, and marked so.
    const lcp = expected.cells[0]!.metrics.find((m) => m.metric === 'lcp')!;
    expect(lcp.significance).toMatchObject({ test: 'mann-whitney-u', beyondNoise: true });
    expect(await page.getAttribute('tr[data-metric="lcp"]', 'class')).toBe('beyond-noise');
    await page.screenshot({ path: join(ARTEFACTS, 'compare-link.png'), fullPage: true });
    expect((await stat(join(ARTEFACTS, 'compare-link.png'))).size).toBeGreaterThan(10_000);
    expect(problems).toEqual([]);
  });

  it('with dates, always shows the same two snapshots; a side links to its snapshot', async () => {
    const [base, head] = [dates[SHOP]![0]!, dates[PREVIEW]![0]!];
    await page.goto(compareViewLink(gateway.url, { url: PREVIEW, baseUrl: SHOP, from: base, to: head }));
    await expect.poll(async () => (await side('from')).date).toBe(base);
    expect(await side('to')).toMatchObject({ url: PREVIEW, date: head });
    await expectMetricsOf(await client.compare({ url: PREVIEW, baseUrl: SHOP, from: base, to: head }));
    await page.click('p.compare-side[data-snapshot="from"] a.side-date');
    // The snapshot's own heading: the compare view's cards match article.cell too, and a test
    // going on before the snapshot view is drawn would race its drawing.
    await expect.poll(() => page.textContent('h1')).toBe(`Snapshot ${base} UTC`);
    expect(decodeURIComponent(page.url())).toContain(`#/snapshot?url=${SHOP}&date=${base}`);
    expect(problems).toEqual([]);
  });

  it('one URL without baseUrl: the view it always was, from=latest the snapshot before the head', async () => {
    await page.goto(compareViewLink(gateway.url, { url: SHOP, from: 'latest', to: 'latest' }));
    await expect.poll(async () => (await side('to')).date).toBe(dates[SHOP]![1]);
    expect(await side('from')).toMatchObject({ url: SHOP, date: dates[SHOP]![0] });
    expect(await text('p.compare-side[data-snapshot="from"]')).toMatch(/^First: /);
    expect(await text('h1')).toBe(`${dates[SHOP]![0]} → ${dates[SHOP]![1]} UTC`);
    expect(problems).toEqual([]);
  });
});

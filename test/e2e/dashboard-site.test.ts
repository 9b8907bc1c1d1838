import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '@perfwatch/client';
import type { SiteOverview } from '@perfwatch/common';
import { launchBrowser, watchedPage } from '../support/browser.ts';
import { createSite, fixtureAgent, twoDiscoveries } from '../support/site-fixtures.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// The dashboard's site page (issue 34, item 3) in a real Chromium against a real gateway,
// nats-server and MongoDB-wire server: the groups of a site whose sampled pages were measured
// (an agent answering with captured Lighthouse results), each value on screen equal to what
// /v1/sites/{id}/overview answers; the worst pages, and the last discovery's new and removed pages.

const SHOP = 'https://site-page.example';
const url = (path: string) => `${SHOP}${path}`;
const SAMPLED = ['/product/1', '/product/2', '/blog/a', '/blog/b'].map(url);

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agent: Awaited<ReturnType<typeof fixtureAgent>>;
let token: string;
let siteId: string;
let browser: Browser;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url });
  agent = await fixtureAgent(nats.url, 'sp');
  ({ token } = await gateway.admin.createUser('site-page'));
  siteId = await createSite(gateway.url, token, { origin: SHOP, locations: ['london'] });
  const pageOf = (path: string) => ({
    url: url(path),
    group: path.replace(/\/[^/]+$/, '/:id'),
    sampled: SAMPLED.includes(url(path)),
  });
  await twoDiscoveries(gateway.store, siteId, pageOf, [
    ['/product/1', '/product/2', '/blog/a', '/blog/b', '/blog/old'],
    ['/product/1', '/product/2', '/product/3', '/blog/a', '/blog/b'],
  ]);
  const client = createApiClient({ server: gateway.url, token });
  for (const sampled of SAMPLED) {
    await gateway.admin.addProject('site-page', sampled, { locations: ['london'], runs: 1 });
    if (sampled === SAMPLED[0]) await client.budgets(sampled, { budgets: { lcp: 1 }, maxRegression: {} });
    await client.update({ url: sampled });
  }
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await gateway?.stop();
  await nats?.dispose();
});

/** The overview as the API client reads it. */
const overviewOf = (): Promise<SiteOverview> => createApiClient({ server: gateway.url, token }).siteOverview(siteId);

/** The groups table as the page shows it: per row its group, device and each cell's data-value. */
const shownGroups = () =>
  page.$$eval('#site-groups tbody tr', (rows) =>
    rows.map((row) => ({
      group: row.getAttribute('data-group'),
      device: row.getAttribute('data-device'),
      values: Object.fromEntries(
        [...row.querySelectorAll('td[data-metric]')].map((td) => [
          td.getAttribute('data-metric'),
          td.getAttribute('data-value'),
        ]),
      ),
    })),
  );

const asText = (value: number | null) => (value === null ? '' : String(value));

describe('the dashboard site page', () => {
  it('lists the sites from the header link and opens a site', async () => {
    await page.goto(`${gateway.url}/`);
    await page.fill('#token', token);
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('.project-link');
    await page.click('#sites-link');
    await page.waitForSelector('.site-link');
    expect(await page.$$eval('.site-link', (links) => links.map((a) => a.textContent))).toEqual([SHOP]);
    await page.click('.site-link');
    await page.waitForSelector('#site-groups');
    expect(page.url()).toContain(`#/site?id=${siteId}`);
  });

  it("shows each group's medians and budget failures equal to /v1/sites/{id}/overview's", async () => {
    const overview = await overviewOf();
    const expected = overview.groups.flatMap((group) =>
      group.devices.map((d) => ({
        group: group.group,
        device: d.device,
        values: {
          score: asText(d.score),
          lcp: asText(d.lcp),
          tbt: asText(d.tbt),
          cls: asText(d.cls),
          budgetFailures: String(d.budgetFailures),
          measuredPages: String(d.measuredPages),
        },
      })),
    );
    expect(expected.map((row) => row.group)).toEqual(['/blog/:id', '/blog/:id', '/product/:id', '/product/:id']);
    expect(await shownGroups()).toEqual(expected);
    // The page with an LCP budget of 1 ms fails it on both devices.
    expect(overview.groups.find((g) => g.group === '/product/:id')!.budgetFailures).toBe(2);
    expect(overview.groups.every((g) => g.measured && g.devices.every((d) => d.score !== null))).toBe(true);
  });

  it('lists the worst pages first, a trend per group, and the new and removed pages', async () => {
    const overview = await overviewOf();
    const worst = await page.$$eval('#site-worst tbody tr', (rows) =>
      rows.map((row) => [
        row.getAttribute('data-url'),
        row.getAttribute('data-device'),
        row.querySelector('[data-metric=score]')!.getAttribute('data-value'),
      ]),
    );
    expect(worst).toEqual(overview.worstPages.map((p) => [p.url, p.device, asText(p.score)]));
    expect(await page.$$eval('.site-trend', (charts) => charts.map((c) => c.getAttribute('data-group')))).toEqual([
      '/blog/:id',
      '/product/:id',
    ]);
    expect(await page.$$eval('#site-added li', (items) => items.map((li) => li.textContent))).toEqual([
      url('/product/3'),
    ]);
    expect(await page.$$eval('#site-gone li', (items) => items.map((li) => li.textContent))).toEqual([
      url('/blog/old'),
    ]);
    expect(problems).toEqual([]);
  });
});

/**
 * Budgets set on a site or one of its page groups, inherited by its pages (issue 34, item 3), on
 * a real gateway, nats-server and agent (answering with captured Lighthouse results): the demo
 * shop discovered, its sampled pages made projects, and only then budgets set on the site and
 * on the product group. A product page's next snapshot fails the group's budget, the overview's
 * product group counts the failures and a group without budgets counts none; a page's own limit
 * wins over its group's; a change of the group's budgets reaches the pages at their next snapshot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { siteChangedSchema, siteOverviewSchema, type AuditResult } from '@perfwatch/common';
import { startDemoSite, type DemoShopSite } from '@perfwatch/local';
import { fixtureAgent, siteRequests } from '../support/site-fixtures.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

const PRODUCT = '/shop/product/:id';
const CATEGORY = '/shop/category/:slug';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let shop: DemoShopSite;
let agent: Awaited<ReturnType<typeof fixtureAgent>>;
let auth: string;
let client: ApiClient;
let siteId: string;

const { api, sites, discovered } = siteRequests(
  () => gateway.url,
  () => auth,
);
const overview = async () => siteOverviewSchema.parse(await api(`/v1/sites/${siteId}/overview`));

const groupOf = async (group: string) => (await overview()).groups.find((g) => g.group === group)!;
const checksOf = (result: AuditResult) => result.desktop!.london!.checks ?? [];
const failing = (result: AuditResult) => checksOf(result).filter((check) => !check.pass);

/** The sampled pages of a group, once the site's first discovery is done. */
async function sampled(group: string): Promise<string[]> {
  const site = await discovered(siteId);
  expect(site.lastDiscovery).toMatchObject({ state: 'done' });
  const pages = await gateway.store.listSitePages(siteId);
  return pages.filter((page) => page.group === group && page.sampled).map((page) => page.url);
}

beforeAll(async () => {
  nats = await isolatedNats();
  shop = await startDemoSite({ site: 'shop' });
  gateway = await startTestGateway({ natsUrl: nats.url, config: { PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8' } });
  agent = await fixtureAgent(nats.url, 'sb');
  const { token } = await gateway.admin.createUser('site-budgets');
  auth = token.startsWith('Bearer ') ? token : `Bearer ${token}`;
  client = createApiClient({ server: gateway.url, token });
  const made = siteChangedSchema.parse(
    await sites('POST', {
      origin: new URL(shop.url).origin,
      maxPages: 500,
      locations: ['london'],
      devices: ['desktop'],
      runs: 1,
    }),
  );
  siteId = made.site.id;
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  await shop?.close();
  await nats?.dispose();
});

describe("a site's budgets and its groups', set after its pages' projects were made", () => {
  let products: string[];
  let category: string;

  it('are shown in the site view and not copied into its pages’ projects', async () => {
    products = await sampled(PRODUCT);
    category = (await sampled(CATEGORY))[0]!;
    expect(products).toHaveLength(3);
    // The projects exist before any budget is set.
    for (const url of [...products, category]) expect(await client.budgets(url)).toMatchObject({ budgets: {} });
    const budgets = { budgets: { performance: 0 }, maxRegression: {} };
    const groupBudgets = { [PRODUCT]: { budgets: { lcp: 1 }, maxRegression: {} } };
    const patched = siteChangedSchema.parse(await sites('PATCH', { id: siteId, budgets, groupBudgets }));
    expect(patched.site).toMatchObject({ budgets, groupBudgets });
    // A page's own budgets stay its own: inheritance is resolved when a snapshot is checked.
    expect(await client.budgets(products[0]!)).toMatchObject({ budgets: {}, maxRegression: {} });
  });

  it("fail a product page's next snapshot by its group's budget; the overview's product group counts them", async () => {
    // The third product page has a limit of its own on LCP: it wins over its group's.
    await client.budgets(products[2]!, { budgets: { lcp: 999_999 }, maxRegression: {} });
    const results = [];
    for (const url of products) results.push(await client.update({ url }));
    for (const result of results.slice(0, 2))
      expect(failing(result).map((check) => [check.key, check.limit, check.state])).toEqual([['lcp', 1, 'failing']]);
    expect(checksOf(results[2]!).find((check) => check.key === 'lcp')).toMatchObject({ pass: true, limit: 999_999 });
    // The site's own budget reaches the product pages too.
    expect(checksOf(results[0]!).find((check) => check.key === 'performance')).toMatchObject({ pass: true, limit: 0 });

    const categoryResult = await client.update({ url: category });
    expect(checksOf(categoryResult).map((check) => [check.key, check.pass])).toEqual([['performance', true]]);

    const product = await groupOf(PRODUCT);
    expect(product).toMatchObject({ measured: true, budgetFailures: 2 });
    expect(await groupOf(CATEGORY)).toMatchObject({ measured: true, budgetFailures: 0 });
  });

  it("a change of the group's budgets reaches its pages at their next snapshot", async () => {
    const groupBudgets = { [PRODUCT]: { budgets: { lcp: 999_999 }, maxRegression: {} } };
    await sites('PATCH', { id: siteId, groupBudgets });
    for (const url of products.slice(0, 2)) {
      const result = await client.update({ url });
      expect(checksOf(result).find((check) => check.key === 'lcp')).toMatchObject({
        pass: true,
        limit: 999_999,
        event: 'budget.recovered',
      });
    }
    expect(await groupOf(PRODUCT)).toMatchObject({ budgetFailures: 0 });
  });
});

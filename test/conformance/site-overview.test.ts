import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '@perfwatch/client';
import { siteOverviewSchema, type AuditResult, type SiteOverview } from '@perfwatch/common';
import {
  documented as documentedReply,
  errorsOf,
  expectRateLimited,
  expectTryAgain,
  newToken,
  send,
  type Asking,
  type Reply,
} from '../support/api-requests.ts';
import { createSite, startSiteServices, twoDiscoveries, type SiteServices } from '../support/site-fixtures.ts';
import type { TestGateway } from '../support/test-services.ts';

// A site's overview (issue 34, item 3) on a real gateway, nats-server and MongoDB-wire server: a
// site whose sampled pages' projects were measured (an agent answering with captured Lighthouse
// results) answers per group the medians of those snapshots, as a client computes them from what
// each update answered; its budget failures, worst pages and last discovery's changes; every
// status the operation documents, each reply checked against /v1/openapi.json.

const SHOP = 'https://overview-shop.example';
const url = (path: string) => `${SHOP}${path}`;
const PRODUCTS = ['/product/1', '/product/2', '/product/3'].map(url);
const PATH = '/v1/sites/{id}/overview';

let services: SiteServices;
let gateway: TestGateway;
let alice: string;
let bob: string;
let siteId: string;
let checker: SiteServices['checker'];
/** What each product page's update answered. */
const measured = new Map<string, AuditResult>();
let broken = false;

type Method = 'GET' | 'POST';
async function call(
  method: Method,
  id: string,
  params: { query?: Record<string, string>; body?: unknown; raw?: string; contentType?: string } = {},
  headers: Record<string, string> = { Authorization: alice },
  base = gateway.url,
): Promise<Reply> {
  const path = `sites/${id}/overview`;
  return documentedReply(checker, path, method, await send(base, path, method, params, headers), PATH);
}
const overviewOf = async (method: Method = 'GET'): Promise<SiteOverview> => {
  const reply = await call(method, siteId);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return siteOverviewSchema.parse(reply.body);
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
type Lhr = { categories: { performance: { score: number } }; audits: Record<string, { numericValue: number }> };
const cellOf = (result: AuditResult, device: 'mobile' | 'desktop') => result[device]!.london!;
const lhrOf = (result: AuditResult, device: 'mobile' | 'desktop') =>
  cellOf(result, device).lighthouse as unknown as Lhr;

const SITE_CALLS = ['findSite', 'listSitePages'];

beforeAll(async () => {
  services = await startSiteServices({ prefix: 'overview', fails: (method) => broken && SITE_CALLS.includes(method) });
  ({ gateway, checker, alice, bob } = services);
  siteId = await createSite(gateway.url, alice, { origin: SHOP, locations: ['london'] });
  // Two discoveries: the second finds /product/4 and no longer /product/9.
  const pageOf = (path: string) => ({
    url: url(path),
    group: path === '/about' ? '/about' : '/product/:id',
    sampled: PRODUCTS.includes(url(path)) || path === '/about',
  });
  await twoDiscoveries(gateway.store, siteId, pageOf, [
    ['/product/1', '/product/2', '/product/3', '/product/9', '/about'],
    ['/product/1', '/product/2', '/product/3', '/product/4', '/about'],
  ]);
  const client = createApiClient({ server: gateway.url, token: alice });
  for (const page of PRODUCTS) {
    await gateway.admin.addProject('overview-alice', page, { locations: ['london'], runs: 1 });
    // The second page fails two budgets on each device.
    if (page === PRODUCTS[1]) await client.budgets(page, { budgets: { lcp: 1, tbt: 1 }, maxRegression: {} });
    measured.set(page, await client.update({ url: page }));
  }
}, 90_000);

afterAll(() => services?.stop());

describe('GET|POST /v1/sites/{id}/overview', () => {
  it("answers per group and device the medians of its sampled pages' latest snapshots", async () => {
    const overview = await overviewOf();
    const product = overview.groups.find((g) => g.group === '/product/:id')!;
    expect(product).toMatchObject({ pages: 4, sampledPages: PRODUCTS, measured: true });
    for (const device of ['mobile', 'desktop'] as const) {
      const lhrs = PRODUCTS.map((page) => lhrOf(measured.get(page)!, device));
      const row = product.devices.find((d) => d.device === device)!;
      expect(row.measuredPages).toBe(3);
      expect(row.score).toBeCloseTo(median(lhrs.map((l) => Math.round(l.categories.performance.score * 100))), 5);
      expect(row.lcp).toBeCloseTo(median(lhrs.map((l) => l.audits['largest-contentful-paint']!.numericValue)), 0);
      expect(row.tbt).toBeCloseTo(median(lhrs.map((l) => l.audits['total-blocking-time']!.numericValue)), 0);
      expect(row.cls).toBeCloseTo(median(lhrs.map((l) => l.audits['cumulative-layout-shift']!.numericValue)), 2);
      const failing = PRODUCTS.flatMap((page) => cellOf(measured.get(page)!, device).checks ?? []).filter(
        (check) => !check.pass,
      );
      expect(row.budgetFailures).toBe(failing.length);
      expect(row.budgetFailures).toBe(2);
    }
    expect(product.budgetFailures).toBe(4);
    expect(product.trend.map((t) => [t.device, t.points.length])).toEqual([
      ['mobile', 1],
      ['desktop', 1],
    ]);
  });

  it('says a group without snapshots is not measured; lists the worst pages first and the last discovery', async () => {
    const overview = await overviewOf('POST');
    expect(overview.groups.find((g) => g.group === '/about')).toMatchObject({ measured: false, budgetFailures: 0 });
    const scores = overview.worstPages.map((p) => p.score!);
    expect(scores).toEqual([...scores].sort((a, b) => a - b));
    expect(overview.worstPages).toHaveLength(6);
    expect(overview.added).toEqual([url('/product/4')]);
    expect(overview.gone).toEqual([url('/product/9')]);
    expect(overview.site).toMatchObject({ id: siteId, origin: SHOP });
  });

  it("404 for another organisation's site and for an id of none; 400 for an id that is not one", async () => {
    expect((await call('GET', siteId, {}, { Authorization: bob })).status).toBe(404);
    expect((await call('POST', '0123456789abcdef01234567')).status).toBe(404);
    expect(errorsOf(await call('GET', 'nope'))).toMatch(/site id/);
    expect(errorsOf(await call('GET', siteId, { query: { days: '3' } }))).toMatch(/unknown parameter\(s\): days/);
  });

  it("a ci token reads the overview of its own pages of a site, nothing of the others; another site's is a 404", async () => {
    const ciToken = (projects: string[]) => newToken(gateway.url, alice, { scope: 'ci', projects });
    await gateway.admin.addProject('overview-alice', url('/product/4'), { locations: ['london'] });
    const own = await call('GET', siteId, {}, { Authorization: await ciToken([PRODUCTS[0]!, url('/product/4')]) });
    expect(own.status).toBe(200);
    const overview = siteOverviewSchema.parse(own.body);
    // Its two pages alone: no /about group, no other product, not even counted; the medians are its one measured page's.
    expect(overview.groups.map((g) => [g.group, g.pages, g.sampledPages])).toEqual([
      ['/product/:id', 2, [PRODUCTS[0]]],
    ]);
    const mobile = overview.groups[0]!.devices.find((d) => d.device === 'mobile')!;
    const lhr = lhrOf(measured.get(PRODUCTS[0]!)!, 'mobile');
    expect(mobile).toMatchObject({ measuredPages: 1, budgetFailures: 0 });
    expect(mobile.score).toBeCloseTo(Math.round(lhr.categories.performance.score * 100), 5);
    expect(overview.worstPages.map((p) => p.url)).toEqual([PRODUCTS[0], PRODUCTS[0]]);
    expect(overview).toMatchObject({ added: [url('/product/4')], gone: [] });
    expect(JSON.stringify(overview)).not.toMatch(/product\/[239]|about/);
    await gateway.admin.addProject('overview-alice', 'https://elsewhere.example/', { locations: ['london'] });
    const other = await ciToken(['https://elsewhere.example/']);
    expect((await call('POST', siteId, {}, { Authorization: other })).status).toBe(404);
  });

  it('400 without a token, 401 with a bad one, 406 when JSON is refused; 413 and 415 for a body it will not read', async () => {
    for (const method of ['GET', 'POST'] as const) {
      expect(errorsOf(await call(method, siteId, {}, {}))).toMatch(/Authorization/);
      expect((await call(method, siteId, {}, { Authorization: 'pw_nope' })).status).toBe(401);
      expect((await call(method, siteId, {}, { Authorization: alice, Accept: 'text/html' })).status).toBe(406);
    }
    expect((await call('POST', siteId, { raw: JSON.stringify({ pad: 'x'.repeat(200_000) }) })).status).toBe(413);
    expect((await call('POST', siteId, { raw: 'a=b', contentType: 'application/x-www-form-urlencoded' })).status).toBe(
      415,
    );
  });

  it('429 with Retry-After past the per-minute limit', async () => {
    const id = '0123456789abcdef01234567';
    const as = (method: Method) => (at: Asking) => call(method, id, {}, at.headers, at.base);
    await expectRateLimited(services.limited, 'overview-busy', { request: as('GET'), status: 404 }, [
      as('GET'),
      as('POST'),
    ]);
  });

  it('500 asks to try again and leaks nothing when the database fails', async () => {
    const asked = (method: Method) => () => call(method, siteId);
    await expectTryAgain((on) => (broken = on), [asked('GET'), asked('POST')]);
  });

  it('every status documented for /v1/sites/{id}/overview was seen to match an actual answer', () => {
    // Every member reads and a ci token may too: no read is a 403.
    const documented = checker.documented().filter((key) => key.includes(` ${PATH} `) && !key.endsWith(' 403'));
    expect(documented.length).toBeGreaterThan(10);
    expect(documented.filter((key) => !checker.seen.has(key))).toEqual([]);
  });
});

import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SHOP_GROUPS, SHOP_SITEMAPS, startDemoSite, type DemoShopSite } from '@perfwatch/local';
import { groupPages } from '../../gateway/src/sites/page-groups.ts';

let shop: DemoShopSite;

beforeAll(async () => {
  shop = await startDemoSite({ site: 'shop' });
});
afterAll(async () => {
  await shop.close();
});

const get = async (path: string) => {
  const response = await fetch(new URL(path, shop.url));
  return { response, body: Buffer.from(await response.arrayBuffer()) };
};
const locs = (xml: string) => [...xml.matchAll(/<loc>([^<]+)<\/loc>/g)].map(([, loc]) => loc ?? '');
const hrefs = (html: string, base: string) =>
  [...html.matchAll(/href="([^"]+)"/g)].map(([, href]) => new URL(href ?? '', base).href);

describe('the demo shop', () => {
  it('lists exactly its 200 pages through robots.txt, a sitemap index and two child sitemaps, one gzip', async () => {
    const robots = (await get('/robots.txt')).body.toString();
    const index = /^Sitemap: (\S+)$/m.exec(robots)?.[1];
    expect(index).toBe(new URL(SHOP_SITEMAPS.index, shop.url).href);
    const children = locs((await get(index ?? '')).body.toString());
    expect(children).toHaveLength(2);
    const listed: string[] = [];
    for (const child of children) {
      const { response, body } = await get(child);
      expect(response.status).toBe(200);
      const gzip = child.endsWith('.xml.gz');
      // Real gzip bytes (the magic number), not a plain file nor a Content-Encoding a client undoes.
      if (gzip) expect([body[0], body[1], response.headers.get('content-encoding')]).toEqual([0x1f, 0x8b, null]);
      listed.push(...locs((gzip ? gunzipSync(body) : body).toString()));
    }
    expect(children.filter((child) => child.endsWith('.xml.gz'))).toHaveLength(1);
    expect(listed).toHaveLength(200);
    expect(new Set(listed)).toEqual(new Set(shop.pages));
  });

  it('answers every page with HTML that has an LCP picture and links a crawl from / follows to all 200', async () => {
    const seen = new Set([new URL('/', shop.url).href]);
    const queue = [...seen];
    for (let url = queue.shift(); url !== undefined; url = queue.shift()) {
      const { response, body } = await get(url);
      const html = body.toString();
      expect([url, response.status, response.headers.get('content-type')]).toEqual([
        url,
        200,
        expect.stringMatching(/^text\/html/),
      ]);
      expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
      expect(html).toMatch(/<title>[^<]+<\/title>/);
      expect(html).toMatch(/<img src="[^"]+" width="\d+" height="\d+" alt="[^"]*">/);
      const links = hrefs(html, url).filter((link) => link.startsWith(shop.url) && link !== url);
      expect(links.length).toBeGreaterThan(0);
      for (const link of links.filter((link) => !seen.has(link))) {
        seen.add(link);
        queue.push(link);
      }
    }
    expect(new Set(seen)).toEqual(new Set(shop.pages));
  });

  it('groups into the routes perfwatch infers from its URLs', () => {
    const groups = groupPages({ siteId: 'demo-shop', urls: [...shop.pages] });
    const expected = DEMO_SHOP_GROUPS.map(({ name, paths }) => ({
      name,
      urls: paths.map((path) => new URL(path, shop.url).href).sort(),
    }));
    expect(groups.map(({ name, urls }) => ({ name, urls }))).toEqual(
      expected.sort((a, b) => (a.name < b.name ? -1 : 1)),
    );
    expect(groups.find(({ name }) => name === '/shop/product/:id')?.urls).toHaveLength(40);
  });

  it('makes the chosen template slow and only it, against the same run’s other pages', async () => {
    shop.slowTemplate('/shop/product/', { serverMs: 400, beforePaintMs: 300, afterLoadMs: 300 });
    try {
      const timed = async (url: string) => {
        const started = performance.now();
        const { body } = await get(url);
        return { url, ms: performance.now() - started, blocks: body.toString().includes('performance.now() + 300') };
      };
      const results = [];
      for (const url of shop.pages.filter((_, i) => i % 4 === 0)) results.push(await timed(url));
      const slow = results.filter(({ url }) => url.includes('/shop/product/'));
      const fast = results.filter(({ url }) => !url.includes('/shop/product/'));
      expect(slow.length).toBeGreaterThan(5);
      expect(slow.every(({ blocks }) => blocks)).toBe(true);
      expect(fast.some(({ blocks }) => blocks)).toBe(false);
      expect(Math.min(...slow.map(({ ms }) => ms))).toBeGreaterThan(Math.max(...fast.map(({ ms }) => ms)));
    } finally {
      shop.slowTemplate(null);
    }
    const again = await get(shop.pages.find((url) => url.includes('/shop/product/')) ?? '');
    expect(again.body.toString()).not.toContain('performance.now() +');
  });
});

/**
 * Site discovery against a real HTTP server of the test's own: robots.txt, a sitemap index, gzip
 * sitemaps, a link crawl, and the hostile cases (private addresses, a gzip bomb, millions of
 * entries, redirect loops, an oversize robots.txt, a slow drip), each refused with its reason and
 * nothing beyond its bound read. Loopback is reachable as audits make it so in tests (the guard's
 * allow list, PERFWATCH_ALLOW_TARGETS=127.0.0.0/8); every other private address is refused.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { createGzip, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createTargetGuard, parseAllowList } from '@perfwatch/common';
import { discoverPages, type DiscoveryRequest } from '../../gateway/src/sites/discovery/discover-pages.ts';
import type { DiscoveryBounds } from '../../gateway/src/sites/discovery/discovery-bounds.ts';

type Route = string | Buffer | ((req: IncomingMessage, res: ServerResponse) => void);

const guard = createTargetGuard({ allow: parseAllowList('127.0.0.0/8') });
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const typeOf = (path: string) =>
  path.endsWith('.txt') ? 'text/plain' : path.endsWith('.xml') ? 'application/xml' : 'text/html';

/** A site on 127.0.0.1: its routes by path (anything else 404), and every path asked for. */
async function serveSite(routes: (origin: string) => Record<string, Route>) {
  const requests: string[] = [];
  let table: Record<string, Route> = {};
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const route = table[req.url ?? ''];
    if (route === undefined) res.writeHead(404).end();
    else if (typeof route === 'function') route(req, res);
    else res.writeHead(200, { 'content-type': typeOf(req.url ?? '') }).end(route);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  table = routes(origin);
  closers.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  });
  return { origin, requests };
}

const urlset = (urls: string[]) =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${u}</loc></url>`).join('')}</urlset>`;
const index = (urls: string[]) =>
  `<sitemapindex>${urls.map((u) => `<sitemap><loc>${u}</loc></sitemap>`).join('')}</sitemapindex>`;
const redirect = (location: string) => (_req: IncomingMessage, res: ServerResponse) =>
  res.writeHead(302, { location }).end();

const discover = (request: Partial<DiscoveryRequest> & { origin: string }, bounds: Partial<DiscoveryBounds> = {}) =>
  discoverPages({ sitemap: 'discover', maxPages: 1000, ...request }, { guard, bounds });

describe('discovery from sitemaps', () => {
  const shop = (o: string) => ({
    '/robots.txt': 'User-agent: *\nDisallow: /private\n\nsitemap: /index.xml\n',
    '/index.xml': index([`${o}/s1.xml`, `${o}/s2.xml.gz`, `${o}/s1.xml`]),
    '/s1.xml': urlset([`${o}/`, `${o}/product/1`, `${o}/product/1/reviews`, `${o}/private/x`, `${o}/product/1`]),
    '/s2.xml.gz': gzipSync(urlset([`${o}/product/2`, `${o}/blog/hello`, 'https://elsewhere.example/product/9'])),
  });

  it("finds the site's pages from robots.txt, an index and two sitemaps (one gzip), leaving out what it should", async () => {
    const { origin, requests } = await serveSite(shop);
    const found = await discover({ origin, exclude: ['/product/:id/reviews'] });
    expect(found.source).toBe('sitemap');
    expect(found.pages).toEqual([`${origin}/`, `${origin}/product/1`, `${origin}/product/2`, `${origin}/blog/hello`]);
    expect(found.excluded).toEqual({ pattern: 1, robots: 1 });
    expect(found.refused).toEqual([
      { url: 'https://elsewhere.example/product/9', reason: `not on the site's origin ${origin}` },
    ]);
    expect(found.cut).toEqual([]);
    expect(found.documents.map((d) => [d.url.replace(origin, ''), d.status, d.entries])).toEqual([
      ['/robots.txt', 200, 0],
      ['/index.xml', 200, 3],
      ['/s1.xml', 200, 5],
      ['/s2.xml.gz', 200, 3],
    ]);
    // The index's duplicate child is read once; /sitemap.xml is not asked for when robots.txt names one.
    expect(requests).toEqual(['/robots.txt', '/index.xml', '/s1.xml', '/s2.xml.gz']);
  });

  it('keeps only what the include patterns name, and stops at maxPages saying so', async () => {
    const { origin } = await serveSite(shop);
    const included = await discover({ origin, include: ['/product/:id'] });
    expect(included.pages).toEqual([`${origin}/product/1`, `${origin}/product/2`]);
    const cut = await discover({ origin, maxPages: 2 });
    expect(cut.pages).toEqual([`${origin}/`, `${origin}/product/1`]);
    expect(cut.cut).toEqual([
      { bound: 'maxPages', reason: "the site's maxPages (2) were found; the rest were not read" },
    ]);
  });

  it('reads /sitemap.xml when robots.txt names none, and a sitemap named by the site instead', async () => {
    const { origin, requests } = await serveSite((o) => ({
      '/sitemap.xml': urlset([`${o}/a`]),
      '/mine.xml': (_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(urlset([`${o}/b`]))),
    }));
    expect((await discover({ origin })).pages).toEqual([`${origin}/a`]);
    expect((await discover({ origin, sitemap: `${origin}/mine.xml` })).pages).toEqual([`${origin}/b`]);
    expect(requests).toEqual(['/robots.txt', '/sitemap.xml', '/robots.txt', '/mine.xml']);
  });
});

describe('discovery by link crawl', () => {
  it('crawls the origin from its home page when there is no sitemap, within the depth and robots.txt', async () => {
    const page = (links: string[]) => `<html><body>${links.map((l) => `<a href="${l}">x</a>`).join('')}</body></html>`;
    const { origin, requests } = await serveSite(() => ({
      '/robots.txt': 'User-agent: *\nDisallow: /admin\n',
      '/': page(['/1', '/about#team', 'https://elsewhere.example/', '/admin', '/moved', 'mailto:a@b.c']),
      '/1': page(['/2', '/']),
      '/2': page(['3']),
      '/3': page(['/4']),
      '/4': page([]),
      '/about': page([]),
      '/moved': redirect('/about/'),
      '/about/': page([]),
    }));
    const found = await discover({ origin });
    expect(found.source).toBe('crawl');
    expect(new Set(found.pages)).toEqual(
      new Set(['/', '/1', '/about', '/about/', '/2', '/3'].map((path) => `${origin}${path}`)),
    );
    expect(found.excluded.robots).toBe(1);
    expect(requests).not.toContain('/4');
    expect(requests).not.toContain('/admin');
    expect(found.cut).toEqual([]);
  });

  it('fetches no more than maxPages pages', async () => {
    const { origin, requests } = await serveSite(() => ({
      '/': Array.from({ length: 50 }, (_, i) => `<a href="/p${i}">p</a>`).join(''),
      ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`/p${i}`, '<p>page</p>'])),
    }));
    const found = await discover({ origin, maxPages: 10 });
    expect(found.pages).toHaveLength(10);
    expect(found.crawled).toBe(10);
    expect(requests.filter((path) => path.startsWith('/p'))).toHaveLength(9);
    expect(found.cut.map((c) => c.bound)).toEqual(['maxPages']);
  });
});

describe('hostile sites', () => {
  const privateAddress = /is not a public address/;

  it('refuses sitemaps and redirects to private addresses, and pages of other origins, each with its reason', async () => {
    const { origin, requests } = await serveSite((o) => ({
      '/robots.txt': `Sitemap: http://169.254.169.254/latest/meta-data/sitemap.xml\nSitemap: ${o}/index.xml\n`,
      '/index.xml': index(['http://10.0.0.1/sitemap.xml', `${o}/pages.xml`, `${o}/moved.xml`]),
      '/pages.xml': urlset([
        'http://10.0.0.1/admin',
        'http://[fd00::1]/x',
        'http://169.254.169.254/latest/',
        `${o}/ok`,
      ]),
      '/moved.xml': redirect('http://10.0.0.1/sitemap.xml'),
    }));
    const found = await discover({ origin });
    expect(found.pages).toEqual([`${origin}/ok`]);
    const reasons = Object.fromEntries(found.refused.map((r) => [r.url, r.reason]));
    expect(reasons['http://169.254.169.254/latest/meta-data/sitemap.xml']).toMatch(privateAddress);
    expect(reasons['http://10.0.0.1/sitemap.xml']).toMatch(privateAddress);
    expect(reasons[`${origin}/moved.xml`]).toMatch(
      /^redirected to http:\/\/10\.0\.0\.1\/sitemap\.xml: .*is not a public address/,
    );
    for (const url of ['http://10.0.0.1/admin', 'http://[fd00::1]/x', 'http://169.254.169.254/latest/'])
      expect(reasons[url]).toBe(`not on the site's origin ${origin}`);
    expect(found.refusedTotal).toBe(6);
    expect(requests).toEqual(['/robots.txt', '/index.xml', '/pages.xml', '/moved.xml']);
  });

  it('refuses an index nested past two levels, and reads no more sitemaps than the bound', async () => {
    const { origin, requests } = await serveSite((o) => ({
      '/sitemap.xml': index([`${o}/i1.xml`]),
      '/i1.xml': index([`${o}/i2.xml`, `${o}/pages.xml`]),
      '/i2.xml': index([`${o}/i3.xml`]),
      '/pages.xml': urlset([`${o}/a`]),
      '/many.xml': index(Array.from({ length: 50 }, (_, i) => `${o}/m${i}.xml`)),
      ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`/m${i}.xml`, urlset([`${o}/m/${i}`])])),
    }));
    const nested = await discover({ origin });
    expect(nested.pages).toEqual([`${origin}/a`]);
    expect(nested.refused).toEqual([
      { url: `${origin}/i2.xml`, reason: 'a sitemap index nested more than 2 levels deep: not read' },
    ]);
    expect(requests).not.toContain('/i3.xml');
    const many = await discover({ origin, sitemap: `${origin}/many.xml` }, { maxSitemaps: 10 });
    expect(many.pages).toHaveLength(9);
    expect(many.cut).toEqual([{ bound: 'sitemaps', reason: '10 sitemaps were listed; the rest were not read' }]);
    expect(requests.filter((path) => path.startsWith('/m'))).toHaveLength(10);
  });

  it('refuses a redirect loop and a redirect chain past the bound', async () => {
    const { origin, requests } = await serveSite((o) => ({
      '/sitemap.xml': redirect('/a.xml'),
      '/a.xml': redirect(`${o}/b.xml`),
      '/b.xml': redirect('/a.xml'),
      '/long.xml': redirect('/l1'),
      ...Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`/l${i}`, redirect(`/l${i + 1}`)])),
    }));
    const loop = await discover({ origin });
    expect(loop.refused[0]).toEqual({
      url: `${origin}/sitemap.xml`,
      reason: `redirect loop: ${origin}/sitemap.xml → ${origin}/a.xml → ${origin}/b.xml → ${origin}/a.xml`,
    });
    expect(requests.filter((path) => path === '/a.xml')).toHaveLength(1);
    const long = await discover({ origin, sitemap: `${origin}/long.xml` });
    expect(long.refused[0]).toEqual({ url: `${origin}/long.xml`, reason: 'more than 5 redirects' });
    expect(requests).not.toContain('/l6');
  });

  it('stops a gzip bomb at the bound of decompressed bytes', async () => {
    let sent = 0;
    let closed = false;
    const { origin } = await serveSite(() => ({
      '/sitemap.xml': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/xml', 'content-encoding': 'gzip' });
        const zeros = Buffer.alloc(1024 * 1024, 32);
        const gzip = createGzip();
        gzip.on('data', (chunk: Buffer) => (sent += chunk.length));
        Readable.from(
          (function* () {
            yield Buffer.from('<urlset>');
            for (;;) yield zeros;
          })(),
        )
          .pipe(gzip)
          .pipe(res);
        res.on('close', () => {
          closed = true;
          gzip.destroy();
        });
      },
    }));
    const found = await discover({ origin }, { sitemapBytes: 4 * 1024 * 1024 });
    expect(found.refused).toEqual([
      { url: `${origin}/sitemap.xml`, reason: 'larger than 4194304 bytes once decompressed: read no further' },
    ]);
    expect(found.cut.map((c) => c.bound)).toContain('bytes');
    const sitemap = found.documents.find((d) => d.kind === 'sitemap')!;
    expect(sitemap.bytes).toBeLessThanOrEqual(4 * 1024 * 1024 + 64 * 1024);
    await expect.poll(() => closed).toBe(true);
    // What the server compressed before the connection closed: a few hundred KB of its endless stream.
    expect(sent).toBeLessThan(4 * 1024 * 1024);
  });

  it('reads no further than the entries bound in a sitemap of five million entries', async () => {
    let generated = 0;
    const { origin } = await serveSite((o) => ({
      '/sitemap.xml': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/xml' });
        Readable.from(
          (function* () {
            yield '<urlset>';
            for (; generated < 5_000_000; generated++) yield `<url><loc>${o}/p/${generated}</loc></url>`;
            yield '</urlset>';
          })(),
        ).pipe(res);
      },
    }));
    const found = await discover({ origin, maxPages: 50_000 }, { maxEntries: 20_000 });
    expect(found.pages).toHaveLength(20_000);
    expect(found.entries).toBe(20_001);
    expect(found.cut).toEqual([{ bound: 'entries', reason: '20000 sitemap entries were read; the rest were not' }]);
    expect(generated).toBeLessThan(200_000);
  });

  it('reads the rules within the bound of an oversize robots.txt, and no Sitemap line past it', async () => {
    const padding = '# a comment line to make the file large\n'.repeat(20_000);
    const { origin, requests } = await serveSite((o) => ({
      '/robots.txt': `User-agent: *\nDisallow: /secret\n${padding}Sitemap: ${o}/late.xml\n`,
      '/sitemap.xml': urlset([`${o}/open`, `${o}/secret/a`]),
    }));
    const found = await discover({ origin });
    expect(found.refused).toEqual([
      {
        url: `${origin}/robots.txt`,
        reason: 'larger than 512000 bytes as sent: read no further; the rules of its lines before that are used',
      },
    ]);
    expect(found.documents[0]).toMatchObject({ kind: 'robots', bytes: 512_000 });
    expect(found.pages).toEqual([`${origin}/open`]);
    expect(found.excluded.robots).toBe(1);
    expect(requests).not.toContain('/late.xml');
  });

  it('gives up on a slow drip when the time budget runs out, keeping what came before', async () => {
    const { origin } = await serveSite((o) => ({
      '/sitemap.xml': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.write('<urlset>');
        let n = 0;
        const drip = setInterval(() => res.write(`<url><loc>${o}/d/${n++}</loc></url>`), 100);
        res.on('close', () => clearInterval(drip));
      },
    }));
    const started = performance.now();
    const found = await discover({ origin }, { timeBudgetMs: 1500 });
    expect(performance.now() - started).toBeLessThan(2500);
    expect(found.refused).toEqual([
      { url: `${origin}/sitemap.xml`, reason: 'the time budget of 1500 ms ran out while reading it' },
    ]);
    expect(found.cut.map((c) => c.bound)).toEqual(['time']);
    expect(found.pages.length).toBeGreaterThan(5);
    expect(found.source).toBe('sitemap');
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { groupPages, samplePages } from './page-groups.ts';

const ORIGIN = 'https://shop.example';
const at = (path: string) => `${ORIGIN}${path}`;
const range = (n: number, page: (i: number) => string) => Array.from({ length: n }, (_, i) => at(page(i + 1)));
const names = (urls: string[], patterns: string[] = []) =>
  groupPages({ siteId: 'site-1', urls, patterns }).map(({ name }) => name);

const products = range(40, (i) => `/product/${(1000 + i * 7).toString()}`);
const SITE = [
  at('/'),
  at('/about'),
  at('/contact'),
  at('/pricing'),
  ...products,
  ...range(12, (i) => `/blog/notes-on-release-${i.toString()}`),
  ...['alice', 'bruno', 'chen', 'dara', 'emeka', 'farah', 'greta'].map((name) => at(`/team/${name}`)),
  ...range(5, (i) => `/orders/3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6${i.toString()}`),
];

describe('page groups inferred from the URLs', () => {
  it('groups forty product pages into one template, and fixed sections stay their own groups', () => {
    const groups = groupPages({ siteId: 'site-1', urls: SITE });
    expect(groups.find(({ name }) => name === '/product/:id')?.urls).toHaveLength(40);
    expect(names(SITE)).toEqual([
      '/',
      '/about',
      '/blog/:slug',
      '/contact',
      '/orders/:id',
      '/pricing',
      '/product/:id',
      '/team/:slug',
    ]);
  });

  it('keeps a handful of fixed words apart and makes ids a parameter from three on', () => {
    const shop = [at('/shop/cart'), at('/shop/checkout'), at('/shop/account')];
    expect(names(shop)).toEqual(['/shop/account', '/shop/cart', '/shop/checkout']);
    expect(names([at('/help/1'), at('/help/2')])).toEqual(['/help/1', '/help/2']);
    expect(names([at('/help/1'), at('/help/2'), at('/help/3'), at('/help/faq')])).toEqual(['/help/:id', '/help/faq']);
  });

  it('keeps two collections under one section apart, and names two parameters of one template apart', () => {
    const urls = [
      ...range(6, (i) => `/shop/product/${i.toString()}`),
      ...range(6, (i) => `/shop/category/kind-${i.toString()}`),
      ...['2022', '2023', '2024'].flatMap((year) => range(3, (i) => `/news/${year}/story-number-${i.toString()}`)),
    ];
    expect(names(urls)).toEqual(['/news/:id/:slug', '/shop/category/:slug', '/shop/product/:id']);
    expect(names(range(8, (i) => `/docs/${i.toString()}a/${i.toString()}b`))).toEqual(['/docs/:slug/:slug2']);
  });

  it('lets the first matching user pattern name a group, the rest still inferred', () => {
    const urls = [...SITE, at('/docs/intro'), at('/docs/api/errors')];
    const groups = groupPages({ siteId: 'site-1', urls, patterns: ['/docs/*', '/about', '/:page'] });
    expect(groups.find(({ name }) => name === '/docs/*')).toMatchObject({
      source: 'pattern',
      urls: [at('/docs/api/errors'), at('/docs/intro')],
    });
    expect(groups.find(({ name }) => name === '/:page')?.urls).toEqual([at('/contact'), at('/pricing')]);
    expect(groups.find(({ name }) => name === '/about')?.source).toBe('pattern');
    expect(groups.find(({ name }) => name === '/product/:id')?.source).toBe('inferred');
  });

  it('keeps a product with a page below it in its template, and a page that fits none on its own', () => {
    const urls = [
      ...products,
      at('/product/1007/reviews'),
      at('/checkout/thank-you'),
      at('/about?ref=footer'),
      at('/about'),
    ];
    const groups = groupPages({ siteId: 'site-1', urls });
    expect(groups.map(({ name, urls: members }) => [name, members.length])).toEqual([
      ['/about', 2],
      ['/checkout/thank-you', 1],
      ['/product/:id', 40],
      ['/product/:id/reviews', 1],
    ]);
  });

  it('refuses a pattern that is not a URL pattern', () => {
    expect(() => groupPages({ siteId: 's', urls: SITE, patterns: ['/product/(unclosed'] })).toThrow(/URL pattern/);
  });

  it('samples three pages per group by default, every page on request', () => {
    const groups = groupPages({ siteId: 'site-1', urls: SITE });
    for (const group of groups) expect(group.sample).toHaveLength(Math.min(3, group.urls.length));
    const all = groupPages({ siteId: 'site-1', urls: SITE, sampleSize: 'all' });
    for (const group of all) expect(group.sample).toEqual(group.urls);
  });
});

describe('page groups are stable', () => {
  const site = fc.uniqueArray(
    fc.oneof(
      fc.integer({ min: 1, max: 5000 }).map((n) => at(`/product/${n.toString()}`)),
      fc.constantFrom('/', '/about', '/contact', '/blog/a-long-read', '/blog/second-long-read').map(at),
      fc.stringMatching(/^[a-z]{1,6}(\/[a-z0-9]{1,6}){0,2}$/).map((path) => at(`/${path}`)),
    ),
    { minLength: 1, maxLength: 60 },
  );

  it('gives the same groups and samples whatever the order of the input', () => {
    fc.assert(
      fc.property(site, fc.integer(), (urls, seed) => {
        const shuffled = [...urls].sort(
          (a, b) => ((a.length * seed) % 7) - ((b.length * seed) % 7) || (a < b ? 1 : -1),
        );
        expect(groupPages({ siteId: 's', urls: shuffled })).toEqual(groupPages({ siteId: 's', urls }));
      }),
    );
  });

  it('changes a sample by at most the page added', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.webUrl(), { minLength: 1, maxLength: 30 }),
        fc.webUrl(),
        fc.integer({ min: 1, max: 5 }),
        (urls, added, size) => {
          const before = samplePages('site-9', urls, size);
          const after = samplePages('site-9', [...urls, added], size);
          expect(after.filter((url) => url !== added).every((url) => before.includes(url))).toBe(true);
          expect(before.filter((url) => !after.includes(url)).length).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it('keeps a group sample when a page of its template is added, but for that page', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2000, max: 9000 }), (n) => {
        const sampleOf = (urls: string[]) =>
          groupPages({ siteId: 'site-1', urls }).find(({ name }) => name === '/product/:id')?.sample ?? [];
        const added = at(`/product/${n.toString()}`);
        const before = sampleOf(SITE);
        const after = sampleOf([...SITE, added]);
        expect(after.filter((url) => url !== added)).toEqual(before.filter((url) => after.includes(url)));
        expect(before.filter((url) => !after.includes(url)).length).toBeLessThanOrEqual(1);
      }),
    );
  });
});

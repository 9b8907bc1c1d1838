import { describe, expect, it } from 'vitest';
import { median, siteOverview, type PageMeasure } from './site-overview.ts';
import type { SitePageRecord } from './store/sites-store.ts';

const SITE = { id: 'a'.repeat(24), origin: 'https://shop.example' };
const EARLIER = new Date('2026-11-01T00:00:00Z');
const LAST = new Date('2026-11-20T00:00:00Z');

const page = (path: string, group: string, sampled: boolean, more: Partial<SitePageRecord> = {}): SitePageRecord => ({
  siteId: SITE.id,
  url: `https://shop.example${path}`,
  group,
  sampled,
  firstSeenAt: EARLIER,
  lastSeenAt: LAST,
  goneAt: null,
  ...more,
});

const measure = (path: string, score: number | null, more: Partial<PageMeasure> = {}): PageMeasure => ({
  url: `https://shop.example${path}`,
  device: 'mobile',
  date: LAST,
  score,
  // A worse score, a later LCP.
  lcp: score === null ? null : 5000 - score * 10,
  tbt: 100,
  cls: 0.01,
  budgetFailures: 0,
  ...more,
});

const PAGES = [
  page('/product/1', '/product/:id', true),
  page('/product/2', '/product/:id', true),
  page('/product/3', '/product/:id', true),
  page('/product/4', '/product/:id', false, { firstSeenAt: LAST }),
  page('/product/5', '/product/:id', false, { lastSeenAt: EARLIER, goneAt: LAST }),
  page('/', '/', true),
  page('/about', '/about', true),
];

describe('median', () => {
  it('is the middle value, the mean of the two middle ones, or null for none', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNull();
  });
});

describe('siteOverview', () => {
  const measures = [
    measure('/product/1', 90),
    measure('/product/2', 50, { budgetFailures: 2 }),
    measure('/product/3', 70),
    measure('/product/1', 95, { device: 'desktop', budgetFailures: 1 }),
    measure('/', 99),
  ];
  const overview = siteOverview(SITE, PAGES, measures, []);

  it('answers per group and device the medians over its sampled pages, with their budget failures', () => {
    const product = overview.groups.find((g) => g.group === '/product/:id')!;
    expect(product).toMatchObject({ pages: 4, measured: true, budgetFailures: 3 });
    expect(product.sampledPages).toEqual(['/product/1', '/product/2', '/product/3'].map((p) => SITE.origin + p));
    expect(product.devices).toEqual([
      { device: 'mobile', measuredPages: 3, score: 70, lcp: 4300, tbt: 100, cls: 0.01, budgetFailures: 2 },
      { device: 'desktop', measuredPages: 1, score: 95, lcp: 4050, tbt: 100, cls: 0.01, budgetFailures: 1 },
    ]);
  });

  it('says so of a group without snapshots: not measured, its medians null', () => {
    const about = overview.groups.find((g) => g.group === '/about')!;
    expect(about.measured).toBe(false);
    expect(about.devices.map((d) => [d.score, d.lcp, d.tbt, d.cls, d.measuredPages])).toEqual([
      [null, null, null, null, 0],
      [null, null, null, null, 0],
    ]);
  });

  it('lists the pages worst first, each with its group', () => {
    expect(overview.worstPages.map((p) => [p.url.slice(SITE.origin.length), p.device, p.score])).toEqual([
      ['/product/2', 'mobile', 50],
      ['/product/3', 'mobile', 70],
      ['/product/1', 'mobile', 90],
      ['/product/1', 'desktop', 95],
      ['/', 'mobile', 99],
    ]);
    expect(overview.worstPages[0]).toMatchObject({ group: '/product/:id', budgetFailures: 2 });
  });

  it('names the last discovery, the pages it added and those it lost', () => {
    expect(overview.site.discoveredAt).toBe(LAST.toISOString());
    expect(overview.added).toEqual([`${SITE.origin}/product/4`]);
    expect(overview.gone).toEqual([`${SITE.origin}/product/5`]);
    expect(overview.groups.map((g) => g.group)).toEqual(['/', '/about', '/product/:id']);
  });

  it('has a daily median score per group and device, oldest day first', () => {
    const at = (day: string, hour: number) => new Date(`2026-11-${day}T${String(hour).padStart(2, '0')}:00:00Z`);
    const url = (p: string) => SITE.origin + p;
    const points = [
      { url: url('/product/1'), device: 'mobile' as const, date: at('19', 1), score: 80 },
      { url: url('/product/2'), device: 'mobile' as const, date: at('19', 2), score: 40 },
      { url: url('/product/1'), device: 'mobile' as const, date: at('18', 1), score: 90 },
      { url: url('/product/4'), device: 'mobile' as const, date: at('18', 1), score: 10 },
    ];
    const product = siteOverview(SITE, PAGES, measures, points).groups.find((g) => g.group === '/product/:id')!;
    expect(product.trend).toEqual([
      {
        device: 'mobile',
        points: [
          { day: '2026-11-18', score: 90 },
          { day: '2026-11-19', score: 60 },
        ],
      },
    ]);
  });

  it('shows the devices the site measures, and one it measured before its settings changed', () => {
    const desktopOnly = { ...SITE, devices: ['desktop' as const] };
    const devicesOf = (measures: PageMeasure[]) =>
      siteOverview(desktopOnly, PAGES, measures, []).groups[0]!.devices.map((d) => d.device);
    expect(devicesOf([measure('/product/1', 90, { device: 'desktop' })])).toEqual(['desktop']);
    expect(devicesOf([measure('/product/1', 90)])).toEqual(['mobile', 'desktop']);
  });

  it('has no discovery on a site never discovered', () => {
    expect(siteOverview(SITE, [], [], [])).toEqual({
      site: { ...SITE, discoveredAt: null },
      groups: [],
      worstPages: [],
      added: [],
      gone: [],
    });
  });
});

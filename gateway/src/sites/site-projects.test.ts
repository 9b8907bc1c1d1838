import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite-store.ts';
import { addSiteProject, syncSiteProjects } from './site-projects.ts';
import type { SiteRecord } from './store/sites-store.ts';

const SHOP = 'https://shop.example';
const page = (path: string, sampled: boolean) => ({ url: `${SHOP}${path}`, group: '/product/:id', sampled });

describe("a site's projects follow its pages", () => {
  let store: SqliteStore;
  let site: SiteRecord;
  const projectUrls = async () =>
    (await store.listProjects(site.userId))
      .filter((project) => project.siteId === site.id)
      .map((project) => new URL(project.url).pathname)
      .sort();

  beforeEach(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const user = await store.createUser('site-owner');
    site = await store.addSite({
      userId: user.id,
      origin: SHOP,
      sitemap: 'discover',
      include: [],
      exclude: [],
      maxPages: 100,
      sampleSize: 1,
      groupPatterns: [],
      devices: null,
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
  });
  afterEach(async () => {
    await store.close();
  });

  it('removes a page’s project only when the page is gone, not when it is merely no longer sampled', async () => {
    await store.replaceSitePages(site.id, [page('/product/1', true), page('/product/2', false)], new Date());
    expect(await syncSiteProjects(store, site)).toEqual({ made: 1, removed: 0 });
    // A site update measured the page outside the sample: it became a project of the site.
    await addSiteProject(store, site, `${SHOP}/product/2`);
    expect(await projectUrls()).toEqual(['/product/1', '/product/2']);

    // The next discovery samples /product/3 instead of /product/1, and no longer finds /product/2.
    await store.replaceSitePages(site.id, [page('/product/1', false), page('/product/3', true)], new Date());
    expect(await syncSiteProjects(store, site, [`${SHOP}/product/3`])).toEqual({ made: 1, removed: 1 });
    expect(await projectUrls()).toEqual(['/product/1', '/product/3']);

    // The site removed: every project of it goes.
    expect(await syncSiteProjects(store, site, [])).toEqual({ made: 0, removed: 2 });
    expect(await projectUrls()).toEqual([]);
  });
});

/**
 * A gateway's site discoveries (site-discoveries.ts, review H7) on a real SQLite store and a real
 * site: a gateway stopping mid-discovery writes none of its pages; an incomplete discovery grows
 * the site's pages no further than its maxPages; a scheduled tick's work asked while a discovery
 * runs waits for the follow-up discovery, which reads the site as it is then.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTargetGuard, parseAllowList } from '@perfwatch/common';
import { SqliteStore } from '@perfwatch/gateway';
import { createSiteDiscoveries, type SiteDiscoveries } from '../../gateway/src/sites/site-discoveries.ts';
import type { SiteRecord } from '../../gateway/src/sites/store/sites-store.ts';
import { silentLogger } from '../support/test-services.ts';
import { twoSitemapSite, type TwoSitemapSite } from '../support/two-sitemap-site.ts';

const guard = createTargetGuard({ allow: parseAllowList('127.0.0.0/8') });

let store: SqliteStore;
let server: TwoSitemapSite;
let site: SiteRecord;
let discoveries: SiteDiscoveries;

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  server = await twoSitemapSite();
  const owner = await store.createUser('discoveries');
  site = await store.addSite({
    userId: owner.id,
    origin: server.origin,
    sitemap: 'discover',
    include: [],
    exclude: [],
    maxPages: 100,
    sampleSize: 20,
    groupPatterns: [],
    devices: null,
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
  discoveries = createSiteDiscoveries({ store, guard, logger: silentLogger });
  expect(await discoveries.start(site)).toMatchObject({ complete: true, added: expect.any(Array) });
});

afterEach(async () => {
  await discoveries.stop();
  await server.close();
  await store.close();
});

const pagePaths = async () =>
  (await store.listSitePages(site.id))
    .filter((page) => page.goneAt === null)
    .map((page) => new URL(page.url).pathname)
    .sort();

describe("a gateway's site discoveries", () => {
  it('a gateway stopping mid-discovery writes none of its pages', async () => {
    server.state.a.push('/a/4');
    server.state.mode = 'hold';
    const running = discoveries.start(site);
    await server.held();
    await discoveries.stop();
    expect(await running).toBeNull();
    // /a/4 was read before it stopped, yet not stored; nothing is gone either.
    expect(await pagePaths()).toEqual(['/a/1', '/a/2', '/a/3', '/b/1', '/b/2', '/b/3']);
    expect((await store.findSite(site.userId, site.id))?.lastDiscovery).toMatchObject({
      state: 'failed',
      reason: 'the gateway stopped',
    });
    expect(await discoveries.start(site)).toBeNull();
  });

  it('an incomplete discovery adds new pages only while the site keeps within its maxPages', async () => {
    await store.setSiteSettings(site.id, { ...site, maxPages: 7 });
    const current = { ...site, maxPages: 7 };
    server.state.mode = '503';
    server.state.a.push('/a/4', '/a/5');
    // /b.xml failed: /b/* stay; one page of room for the two new ones.
    expect(await discoveries.start(current)).toMatchObject({ complete: false, added: [`${server.origin}/a/4`] });
    expect(await pagePaths()).toEqual(['/a/1', '/a/2', '/a/3', '/a/4', '/b/1', '/b/2', '/b/3']);
    server.state.mode = 'ok';
    server.state.b = [];
    expect(await discoveries.start(current)).toMatchObject({ complete: true, gone: expect.any(Array) });
    expect(await pagePaths()).toEqual(['/a/1', '/a/2', '/a/3', '/a/4', '/a/5']);
  });

  it('a tick asked while a discovery runs gets its work done after one more, of the site as it is then', async () => {
    server.state.mode = 'hold';
    const first = discoveries.start(site);
    await server.held();
    const seen: string[][] = [];
    const tick = discoveries.start(site, async () => {
      seen.push(await pagePaths());
    });
    await store.setSiteSettings(site.id, { ...site, exclude: ['/a/*'] });
    server.release();
    expect(await first).toMatchObject({ gone: [] });
    expect(await tick).toMatchObject({ complete: true, gone: expect.arrayContaining([`${server.origin}/a/1`]) });
    expect(seen).toEqual([['/b/1', '/b/2', '/b/3']]);
  });
});

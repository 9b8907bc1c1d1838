import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MongoClient, ObjectId } from 'mongodb';
import { describe, expect, inject, it } from 'vitest';
import { MongoStore, SqliteStore } from '@perfwatch/gateway';
import type { NewSite, SiteSettings } from '../../gateway/src/sites/store/sites-store.ts';
import { describeOnBothStores } from './store-backends.ts';

// An organisation's sites and the pages its discoveries found (SitesStore, issue 34).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.

const site = (userId: string, origin: string): NewSite => ({
  userId,
  origin,
  sitemap: 'discover',
  include: [],
  exclude: ['/admin/**'],
  maxPages: 100,
  sampleSize: 3,
  groupPatterns: ['/product/:id'],
  devices: null,
  locations: ['london'],
  defaultLocation: 'london',
  runs: 3,
  schedule: null,
});

const at = (minute: number) => new Date(Date.UTC(2026, 10, 26, 9, minute));

describeOnBothStores('sites', (store) => {
  it('keeps a site per origin and organisation, finds it by id and origin, lists by origin', async () => {
    const acme = await store().createUser('site-acme');
    const other = await store().createUser('site-other');
    const shop = await store().addSite(site(acme.id, 'https://shop.example'));
    const blog = await store().addSite(site(acme.id, 'https://blog.example'));
    expect(shop).toMatchObject({
      ...site(acme.id, 'https://shop.example'),
      budgets: { budgets: {}, maxRegression: {} },
      groupBudgets: {},
    });
    expect(shop.id).toMatch(/^[0-9a-f]{24}$/);
    expect(shop.createdAt).toBeInstanceOf(Date);
    expect(await store().findSite(acme.id, shop.id)).toEqual(shop);
    expect(await store().findSiteByOrigin(acme.id, 'https://shop.example')).toEqual(shop);
    await expect(store().addSite(site(acme.id, 'https://shop.example'))).rejects.toMatchObject({
      name: 'DuplicateError',
      message: 'site https://shop.example exists for this organisation',
    });
    // Another organisation may watch the same origin, and never sees acme's site.
    const theirs = await store().addSite(site(other.id, 'https://shop.example'));
    expect(await store().findSite(other.id, shop.id)).toBeNull();
    expect(await store().findSite(acme.id, new ObjectId().toHexString())).toBeNull();
    expect(await store().findSite(acme.id, 'not an id')).toBeNull();
    expect((await store().listSites(acme.id)).map((s) => s.id)).toEqual([blog.id, shop.id]);
    expect((await store().listSites()).map((s) => s.id)).toEqual(expect.arrayContaining([blog.id, shop.id, theirs.id]));
  });

  it("replaces a site's settings and budgets, keeping its origin", async () => {
    const owner = await store().createUser('site-settings');
    const made = await store().addSite(site(owner.id, 'https://settings.example'));
    const settings: SiteSettings = {
      sitemap: 'https://settings.example/sitemap_index.xml',
      include: ['/shop/**'],
      exclude: [],
      maxPages: 1000,
      sampleSize: 20,
      groupPatterns: [],
      devices: ['desktop'],
      locations: ['tokyo', 'london'],
      defaultLocation: 'tokyo',
      runs: 1,
      schedule: '0 3 * * *',
    };
    await store().setSiteSettings(made.id, settings);
    const budgets = { budgets: { performance: 90 }, maxRegression: {} };
    // A template may hold a dot, which a MongoDB field name should not: kept all the same.
    const groupBudgets = {
      '/product/:id': { budgets: { lcp: 2500 }, maxRegression: { tbt: 10 } },
      '/docs/:page.html': { budgets: {}, maxRegression: { performance: 5 } },
    };
    await store().setSiteBudgets(made.id, { budgets, groupBudgets });
    expect(await store().findSite(owner.id, made.id)).toEqual({ ...made, ...settings, budgets, groupBudgets });
    // Both are replaced whole: a group left out has no budgets any more.
    const fewer = { '/docs/:page.html': groupBudgets['/docs/:page.html'] };
    await store().setSiteBudgets(made.id, { budgets, groupBudgets: fewer });
    expect((await store().listSites(owner.id))[0]).toMatchObject({ budgets, groupBudgets: fewer });
  });

  it('replaces the pages of a discovery, reporting those added and gone, keeping gone ones listed', async () => {
    const owner = await store().createUser('site-pages');
    const { id } = await store().addSite(site(owner.id, 'https://pages.example'));
    const page = (path: string, group: string, sampled = false) => ({
      url: `https://pages.example${path}`,
      group,
      sampled,
    });
    const first = [page('/', '/', true), page('/product/1', '/product/:id', true), page('/product/2', '/product/:id')];
    expect(await store().replaceSitePages(id, first, at(0))).toEqual({
      added: ['https://pages.example/', 'https://pages.example/product/1', 'https://pages.example/product/2'],
      gone: [],
    });
    // /product/1 went, /product/3 came; the sample moved to /product/2; a URL found twice counts once.
    const second = [page('/', '/', true), page('/product/2', '/product/:id', true), page('/product/3', '/product/:id')];
    expect(await store().replaceSitePages(id, [...second, page('/product/3', '/other')], at(5))).toEqual({
      added: ['https://pages.example/product/3'],
      gone: ['https://pages.example/product/1'],
    });
    const pages = await store().listSitePages(id);
    expect(pages.map((p) => [p.url.slice(21), p.group, p.sampled, p.firstSeenAt, p.lastSeenAt, p.goneAt])).toEqual([
      ['/', '/', true, at(0), at(5), null],
      ['/product/1', '/product/:id', false, at(0), at(0), at(5)],
      ['/product/2', '/product/:id', true, at(0), at(5), null],
      ['/product/3', '/product/:id', false, at(5), at(5), null],
    ]);
    // Found again, a gone page is back (added), and stays gone from the reports meanwhile.
    expect(await store().replaceSitePages(id, [...second, page('/product/1', '/product/:id')], at(9))).toEqual({
      added: ['https://pages.example/product/1'],
      gone: [],
    });
    expect((await store().listSitePages(id)).find((p) => p.url.endsWith('/product/1'))).toMatchObject({
      firstSeenAt: at(0),
      lastSeenAt: at(9),
      goneAt: null,
    });
    expect(await store().replaceSitePages(id, [], at(10))).toEqual({ added: [], gone: expect.any(Array) });
    expect((await store().listSitePages(id)).every((p) => p.goneAt !== null && !p.sampled)).toBe(true);
  });

  it('an incomplete discovery marks no page gone; a complete one deletes the pages gone before it', async () => {
    const owner = await store().createUser('site-prune');
    const { id } = await store().addSite(site(owner.id, 'https://prune.example'));
    const pages = (...paths: string[]) =>
      paths.map((path) => ({ url: `https://prune.example${path}`, group: '/p/:id', sampled: true }));
    const listed = async () =>
      (await store().listSitePages(id)).map((p) => [p.url.slice(21), p.goneAt === null ? 'current' : 'gone']);
    await store().replaceSitePages(id, pages('/p/1', '/p/2', '/p/3'), at(0));
    // Cut short (a sitemap not read): what it found is added or refreshed, the rest stays current.
    expect(await store().replaceSitePages(id, pages('/p/1', '/p/4'), at(1), { complete: false })).toEqual({
      added: ['https://prune.example/p/4'],
      gone: [],
    });
    expect(await listed()).toEqual([
      ['/p/1', 'current'],
      ['/p/2', 'current'],
      ['/p/3', 'current'],
      ['/p/4', 'current'],
    ]);
    expect((await store().listSitePages(id)).find((p) => p.url.endsWith('/p/1'))?.lastSeenAt).toEqual(at(1));
    await store().replaceSitePages(id, pages('/p/1', '/p/3', '/p/4'), at(2));
    await store().replaceSitePages(id, pages('/p/1'), at(3));
    // /p/2 went a discovery earlier: deleted; /p/3 and /p/4 are the last one's gone pages.
    expect(await listed()).toEqual([
      ['/p/1', 'current'],
      ['/p/3', 'gone'],
      ['/p/4', 'gone'],
    ]);
    // A complete discovery without gone pages still deletes those gone before.
    await store().replaceSitePages(id, pages('/p/1'), at(4));
    expect(await listed()).toEqual([['/p/1', 'current']]);
  });

  it("keeps a site's last discovery and marks each tick of its schedule once", async () => {
    const owner = await store().createUser('site-ticks');
    const made = await store().addSite({ ...site(owner.id, 'https://ticks.example'), schedule: '0 * * * *' });
    expect(made).toMatchObject({ lastDiscovery: null, scheduledThrough: null });
    const state = { at: at(1).toISOString(), state: 'done' as const, added: 3, gone: 1, refused: 2, cut: ['time'] };
    await store().setSiteDiscovery(made.id, { ...state, complete: false, reason: null });
    expect(await store().markSiteScheduled(made.id, at(0))).toBe(true);
    // A second replica's mark of the same tick (or an earlier one) loses.
    expect(await store().markSiteScheduled(made.id, at(0))).toBe(false);
    expect(await store().findSite(owner.id, made.id)).toMatchObject({
      lastDiscovery: { ...state, complete: false, reason: null },
      scheduledThrough: at(0),
    });
  });

  it("removes a site with its pages, and only its organisation's", async () => {
    const owner = await store().createUser('site-removal');
    const stranger = await store().createUser('site-stranger');
    const made = await store().addSite(site(owner.id, 'https://removed.example'));
    await store().replaceSitePages(made.id, [{ url: 'https://removed.example/', group: '/', sampled: true }], at(0));
    expect(await store().removeSite(stranger.id, made.id)).toBe(false);
    expect(await store().removeSite(owner.id, 'not an id')).toBe(false);
    expect(await store().removeSite(owner.id, made.id)).toBe(true);
    expect(await store().findSite(owner.id, made.id)).toBeNull();
    expect(await store().listSitePages(made.id)).toEqual([]);
    expect(await store().removeSite(owner.id, made.id)).toBe(false);
    // Its origin is free again.
    expect((await store().addSite(site(owner.id, 'https://removed.example'))).id).not.toBe(made.id);
  });
});

describe('sites: a SQLite file written before sites', () => {
  it('gains their tables at its next open (schema 14), its projects as they were', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-sites-migration-'));
    try {
      const path = join(dir, 'schema13.sqlite');
      const first = new SqliteStore({ path });
      await first.init();
      const owner = await first.createUser('before-sites');
      await first.addProject({
        userId: owner.id,
        url: 'https://old.example/',
        domain: 'old.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      await first.close();
      // Back to what schema 13 wrote: no sites, no pages.
      const db = new DatabaseSync(path);
      db.exec("DROP TABLE sites; DROP TABLE site_pages; UPDATE meta SET value = '13' WHERE key = 'schema'");
      db.close();

      const again = new SqliteStore({ path });
      await again.init();
      try {
        expect((await again.listProjects(owner.id)).map((p) => p.url)).toEqual(['https://old.example/']);
        const made = await again.addSite(site(owner.id, 'https://old.example'));
        await again.replaceSitePages(made.id, [{ url: 'https://old.example/', group: '/', sampled: true }], at(0));
        expect(await again.listSitePages(made.id)).toHaveLength(1);
      } finally {
        await again.close();
      }
      const check = new DatabaseSync(path);
      const { value } = check.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string };
      // 14 at least: later steps may follow.
      expect(Number(value)).toBeGreaterThanOrEqual(14);
      check.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('sites: a SQLite file written before group budgets', () => {
  it('gains them at its next open (schema 16), its sites read back with none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-group-budgets-'));
    try {
      const path = join(dir, 'schema15.sqlite');
      const first = new SqliteStore({ path });
      await first.init();
      const owner = await first.createUser('before-group-budgets');
      const made = await first.addSite(site(owner.id, 'https://old-budgets.example'));
      await first.close();
      // Back to what schema 15 wrote: no group_budgets column.
      const db = new DatabaseSync(path);
      db.exec("ALTER TABLE sites DROP COLUMN group_budgets; UPDATE meta SET value = '15' WHERE key = 'schema'");
      db.close();

      const again = new SqliteStore({ path });
      await again.init();
      try {
        expect(await again.findSite(owner.id, made.id)).toEqual({ ...made, groupBudgets: {} });
        const groupBudgets = { '/product/:id': { budgets: { lcp: 2500 }, maxRegression: {} } };
        await again.setSiteBudgets(made.id, { budgets: made.budgets, groupBudgets });
        expect(await again.findSite(owner.id, made.id)).toMatchObject({ groupBudgets });
      } finally {
        await again.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('sites: a MongoDB site written before group budgets', () => {
  it('reads back with none, and a discovery state without `complete` as before', async () => {
    const uri = inject('mongoUri');
    const dbName = `pwtest_${randomUUID().slice(0, 8)}`;
    const client = await new MongoClient(uri).connect();
    const store = new MongoStore({ uri, dbName });
    try {
      await store.init();
      const owner = await store.createUser('mongo-before-group-budgets');
      const made = await store.addSite(site(owner.id, 'https://old-mongo.example'));
      await client
        .db(dbName)
        .collection('sites')
        .updateOne({ _id: new ObjectId(made.id) }, { $unset: { groupBudgets: '' } });
      expect(await store.findSite(owner.id, made.id)).toEqual({ ...made, groupBudgets: {} });
      // A discovery's state stored before `complete`: a `done` one marked pages gone, so was complete.
      const before = { at: new Date().toISOString(), added: 1, gone: 0, refused: 0, cut: [], reason: null };
      for (const state of ['done', 'failed'] as const) {
        await client
          .db(dbName)
          .collection('sites')
          .updateOne({ _id: new ObjectId(made.id) }, { $set: { lastDiscovery: { ...before, state } } });
        expect((await store.findSite(owner.id, made.id))?.lastDiscovery).toEqual({
          ...before,
          state,
          complete: state === 'done',
        });
      }
    } finally {
      await store.close();
      await client.db(dbName).dropDatabase();
      await client.close();
    }
  });
});

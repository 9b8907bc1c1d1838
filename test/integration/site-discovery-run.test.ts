/**
 * A site's discovery run by a real gateway (issue 34, items 1 and 2): a site made by its origin
 * discovers the demo shop in the background, stores its 200 pages in their groups, and makes a
 * project of each sampled page; a second discovery (asked by PATCH, with an exclude pattern
 * added) finds pages gone and removes their projects; a hostile site leaves nothing behind.
 * Loopback is reachable as audits make it so in tests (PERFWATCH_ALLOW_TARGETS=127.0.0.0/8).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { siteChangedSchema } from '@perfwatch/common';
import { DEMO_SHOP_GROUPS, startDemoSite, type DemoShopSite } from '@perfwatch/local';
import { siteRequests } from '../support/site-fixtures.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let shop: DemoShopSite;
let auth: string;
let orgId: string;

beforeAll(async () => {
  nats = await isolatedNats();
  shop = await startDemoSite({ site: 'shop' });
  gateway = await startTestGateway({ natsUrl: nats.url, config: { PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8' } });
  const { token } = await gateway.admin.createUser('site-runner');
  auth = token.startsWith('Bearer ') ? token : `Bearer ${token}`;
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await shop?.close();
  await nats?.dispose();
});

const { api, sites, discovered } = siteRequests(
  () => gateway.url,
  () => auth,
);

const siteProjects = async (siteId: string) =>
  (await gateway.store.listProjects(orgId)).filter((project) => project.siteId === siteId);

describe('a site discovered by the gateway', () => {
  const origin = () => new URL(shop.url).origin;
  let siteId: string;

  it('stores the shop’s 200 pages in 11 groups, 3 sampled per group, each a project of the site', async () => {
    const made = siteChangedSchema.parse(
      await sites('POST', { origin: origin(), maxPages: 500, locations: ['london'] }),
    );
    // The answer does not wait for the discovery.
    expect(made.site.lastDiscovery).toMatchObject({ state: 'pending' });
    siteId = made.site.id;
    const site = await discovered(siteId);
    expect(site.lastDiscovery).toMatchObject({ state: 'done', added: 200, gone: 0, refused: 0, cut: [] });
    orgId = (await gateway.store.listSites()).find((stored) => stored.id === siteId)!.userId;

    const pages = await gateway.store.listSitePages(siteId);
    expect(pages).toHaveLength(200);
    expect(DEMO_SHOP_GROUPS).toHaveLength(11);
    for (const group of DEMO_SHOP_GROUPS) {
      const members = pages.filter((page) => page.group === group.name);
      expect(members.map((page) => new URL(page.url).pathname).sort()).toEqual([...group.paths].sort());
      expect(members.filter((page) => page.sampled)).toHaveLength(Math.min(3, group.paths.length));
    }
    const sampled = pages.filter((page) => page.sampled).map((page) => page.url);
    const projects = await siteProjects(siteId);
    expect(projects.map((project) => project.url).sort()).toEqual(sampled.sort());
    for (const project of projects) expect(project).toMatchObject({ locations: ['london'], schedule: null, siteId });
  });

  it('a second discovery asked by PATCH finds the excluded pages gone and removes their projects', async () => {
    const events = DEMO_SHOP_GROUPS.find((group) => group.name === '/events/:id')!;
    const before = await siteProjects(siteId);
    const patched = siteChangedSchema.parse(
      await sites('PATCH', { id: siteId, exclude: ['/events/*'], discover: true }),
    );
    expect(patched.site.lastDiscovery).toMatchObject({ state: 'pending' });
    const site = await discovered(siteId);
    expect(site.lastDiscovery).toMatchObject({ state: 'done', added: 0, gone: events.paths.length });
    const pages = await gateway.store.listSitePages(siteId);
    const gone = pages.filter((page) => page.goneAt !== null);
    expect(gone.map((page) => new URL(page.url).pathname).sort()).toEqual([...events.paths].sort());
    expect(gone.every((page) => !page.sampled)).toBe(true);
    const after = await siteProjects(siteId);
    expect(after.map((project) => new URL(project.url).pathname).filter((path) => path.startsWith('/events/'))).toEqual(
      [],
    );
    expect(after).toHaveLength(before.length - 3);
  });

  it('leaves a project the user made by hand at a sampled URL alone, and removes the site’s own with the site', async () => {
    const sampled = (await siteProjects(siteId))[0]!;
    // The user's own project at a page the site samples: removed by hand, made again by hand.
    await gateway.store.removeProject(orgId, sampled.url);
    const mine = await gateway.store.addProject({
      ...sampled,
      siteId: null,
      schedule: '0 3 * * *',
    });
    await sites('PATCH', { id: siteId, discover: true });
    await discovered(siteId);
    expect(await gateway.store.findProject(orgId, sampled.url)).toMatchObject({ id: mine.id, siteId: null });
    await api(`/v1/sites?id=${siteId}`, 'DELETE');
    expect(await siteProjects(siteId)).toEqual([]);
    expect(await gateway.store.findProject(orgId, sampled.url)).toMatchObject({ id: mine.id });
  });
});

describe('a hostile site', () => {
  it('whose sitemaps point at private addresses is refused with its reasons; nothing is stored or queued', async () => {
    const server = createServer((req, res) => {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (req.url === '/robots.txt')
        res.end(`User-agent: *\nSitemap: http://169.254.169.254/latest/sitemap.xml\nSitemap: ${origin}/s.xml\n`);
      else if (req.url === '/s.xml')
        res
          .writeHead(200, { 'content-type': 'application/xml' })
          .end(
            '<urlset><url><loc>http://10.0.0.5/admin</loc></url><url><loc>http://169.254.169.254/latest/meta-data/</loc></url></urlset>',
          );
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const made = siteChangedSchema.parse(await sites('POST', { origin }));
      const site = await discovered(made.site.id);
      orgId = (await gateway.store.listSites()).find((stored) => stored.id === made.site.id)!.userId;
      expect(site.lastDiscovery).toMatchObject({ state: 'failed', added: 0, gone: 0 });
      expect(site.lastDiscovery!.refused).toBeGreaterThanOrEqual(3);
      expect(site.lastDiscovery!.reason).toMatch(/not a public address|not on the site's origin/);
      expect(await gateway.store.listSitePages(made.site.id)).toEqual([]);
      expect(await siteProjects(made.site.id)).toEqual([]);
      expect(await gateway.store.countPendingUpdates('london')).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

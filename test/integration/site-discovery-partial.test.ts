/**
 * A site's discoveries cut short, on a real gateway (issue 34, review H7): a sitemap that answers
 * 503 or breaks off loses no page, project or snapshot (the discovery says it was incomplete);
 * a complete one marks pages gone and deletes those gone before; a site removed mid-discovery
 * stays removed; a discovery asked while one runs runs after it with the new settings; and with
 * MAX_SITE_DISCOVERIES_AT_ONCE=1 two sites' discoveries take turns.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { siteChangedSchema, siteListSchema } from '@perfwatch/common';
import { discovered as discoveredAmong, jsonApi } from '../support/site-fixtures.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';
import { twoSitemapSite, type TwoSitemapSite as TestSite } from '../support/two-sitemap-site.ts';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let auth: string;
let orgId: string;
const servers: TestSite[] = [];

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: { PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8', MAX_SITE_DISCOVERIES_AT_ONCE: 1 },
  });
  const { token } = await gateway.admin.createUser('site-partial');
  auth = token.startsWith('Bearer ') ? token : `Bearer ${token}`;
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  for (const server of servers) await server.close();
  await nats?.dispose();
});

const api = jsonApi(
  () => gateway.url,
  () => auth,
);
const sites = (method: string, body?: unknown) => api('/v1/sites', method, body);
const discovered = (id: string) => discoveredAmong(async () => siteListSchema.parse(await sites('GET')).sites, id);
const paths = (urls: Array<{ url: string }>) => urls.map(({ url }) => new URL(url).pathname).sort();
const siteProjects = async (siteId: string) =>
  (await gateway.store.listProjects(orgId)).filter((project) => project.siteId === siteId);

async function newSite(): Promise<{ server: TestSite; id: string }> {
  const server = await twoSitemapSite();
  servers.push(server);
  // Every page sampled: each is a project of the site.
  const made = siteChangedSchema.parse(await sites('POST', { origin: server.origin, sampleSize: 20 }));
  orgId = (await gateway.store.listSites()).find((site) => site.id === made.site.id)!.userId;
  return { server, id: made.site.id };
}

describe('a discovery cut short', () => {
  let server: TestSite;
  let siteId: string;

  it('keeps the pages of a sitemap that answered 503 or broke off, with their projects and snapshots', async () => {
    ({ server, id: siteId } = await newSite());
    expect((await discovered(siteId)).lastDiscovery).toMatchObject({ state: 'done', added: 6, complete: true });
    const projects = await siteProjects(siteId);
    expect(paths(projects)).toEqual(['/a/1', '/a/2', '/a/3', '/b/1', '/b/2', '/b/3']);
    const measured = projects.find((project) => project.url.endsWith('/b/2'))!;
    await gateway.store.saveSnapshot({
      project: measured,
      updateId: 'kept',
      date: new Date(Math.floor(Date.now() / 1000) * 1000),
      updateType: 'manual',
      results: [],
    });

    for (const mode of ['503', 'reset'] as const) {
      server.state.mode = mode;
      server.state.a.push(`/a/${server.state.a.length + 1}`);
      await sites('PATCH', { id: siteId, discover: true });
      const site = await discovered(siteId);
      expect(site.lastDiscovery, mode).toMatchObject({ state: 'done', added: 1, gone: 0, complete: false });
      const pages = await gateway.store.listSitePages(siteId);
      expect(pages.filter((page) => page.goneAt !== null)).toEqual([]);
      const after = await siteProjects(siteId);
      for (const project of projects) expect(after.find((p) => p.url === project.url)?.id, mode).toBe(project.id);
    }
    expect(await gateway.store.listSnapshots(measured.id)).toHaveLength(1);
  });

  it('a complete one marks pages gone and deletes those gone before it', async () => {
    server.state.mode = 'ok';
    server.state.b = ['/b/1', '/b/2'];
    await sites('PATCH', { id: siteId, discover: true });
    expect((await discovered(siteId)).lastDiscovery).toMatchObject({ state: 'done', gone: 1, complete: true });
    server.state.b = ['/b/1'];
    await sites('PATCH', { id: siteId, discover: true });
    expect((await discovered(siteId)).lastDiscovery).toMatchObject({ state: 'done', gone: 1, complete: true });
    const pages = await gateway.store.listSitePages(siteId);
    // /b/3 went a discovery before the last: its row is gone too; /b/2 is the last one's gone page.
    expect(paths(pages)).toEqual(['/a/1', '/a/2', '/a/3', '/a/4', '/a/5', '/b/1', '/b/2']);
    expect(paths(pages.filter((page) => page.goneAt !== null))).toEqual(['/b/2']);
    expect(paths(await siteProjects(siteId))).not.toContain('/b/2');
  });
});

describe('discoveries that meet', () => {
  it('a site removed during its discovery stays removed, pages and projects with it', async () => {
    const { server, id } = await newSite();
    await discovered(id);
    server.state.mode = 'hold';
    await sites('PATCH', { id, discover: true });
    await server.held();
    await api(`/v1/sites?id=${id}`, 'DELETE');
    server.release();
    await sleep(500);
    expect(siteListSchema.parse(await sites('GET')).sites.map((site) => site.id)).not.toContain(id);
    expect(await gateway.store.listSitePages(id)).toEqual([]);
    expect(await siteProjects(id)).toEqual([]);
  });

  it('a discovery asked while one runs runs after it, with the settings changed meanwhile', async () => {
    const { server, id } = await newSite();
    await discovered(id);
    server.state.mode = 'hold';
    await sites('PATCH', { id, discover: true });
    await server.held();
    const patched = siteChangedSchema.parse(await sites('PATCH', { id, exclude: ['/b/*'], discover: true }));
    expect(patched.site.lastDiscovery).toMatchObject({ state: 'pending' });
    const indexReads = server.state.asked.filter((path) => path === '/index.xml').length;
    server.release();
    const site = await discovered(id);
    expect(site.lastDiscovery).toMatchObject({ state: 'done', gone: 3, complete: true });
    expect(server.state.asked.filter((path) => path === '/index.xml')).toHaveLength(indexReads + 1);
    expect(paths(await siteProjects(id))).toEqual(['/a/1', '/a/2', '/a/3']);
  });

  it('with MAX_SITE_DISCOVERIES_AT_ONCE=1, a second site waits for the first’s discovery to end', async () => {
    const first = await newSite();
    await discovered(first.id);
    first.server.state.mode = 'hold';
    await sites('PATCH', { id: first.id, discover: true });
    await first.server.held();
    const second = await newSite();
    await sleep(700);
    expect(second.server.state.asked).toEqual([]);
    first.server.release();
    expect((await discovered(second.id)).lastDiscovery).toMatchObject({ state: 'done', added: 6 });
    expect(second.server.state.asked[0]).toBe('/robots.txt');
  });
});

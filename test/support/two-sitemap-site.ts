import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A site of two sitemaps under one index: /a.xml lists `a`, /b.xml lists `b` or answers as
 * `mode` says; `hold` keeps /b.xml unanswered until released. Every path asked is logged.
 */
export async function twoSitemapSite() {
  const state = {
    a: ['/a/1', '/a/2', '/a/3'],
    b: ['/b/1', '/b/2', '/b/3'],
    mode: 'ok' as 'ok' | '503' | 'reset' | 'hold',
    asked: [] as string[],
  };
  const held: ServerResponse[] = [];
  const urlset = (paths: string[]) =>
    `<urlset>${paths.map((path) => `<url><loc>${origin}${path}</loc></url>`).join('')}</urlset>`;
  const server = createServer((req, res) => {
    state.asked.push(req.url ?? '');
    const xml = (body: string) => res.writeHead(200, { 'content-type': 'application/xml' }).end(body);
    if (req.url === '/robots.txt') res.end(`User-agent: *\nSitemap: ${origin}/index.xml\n`);
    else if (req.url === '/index.xml')
      xml(
        `<sitemapindex><sitemap><loc>${origin}/a.xml</loc></sitemap><sitemap><loc>${origin}/b.xml</loc></sitemap></sitemapindex>`,
      );
    else if (req.url === '/a.xml') xml(urlset(state.a));
    else if (req.url !== '/b.xml') res.writeHead(404).end();
    else if (state.mode === 'ok') xml(urlset(state.b));
    else if (state.mode === '503') res.writeHead(503).end();
    else if (state.mode === 'reset') req.socket.destroy();
    else held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const until = async (what: string, check: () => boolean) => {
    for (let tries = 0; tries < 200 && !check(); tries++) await sleep(50);
    if (!check()) throw new Error(`still not: ${what}`);
  };
  return {
    origin,
    state,
    /** Whether /b.xml was asked and is held. */
    holding: () => held.length > 0,
    /** Resolves once /b.xml is asked and held. */
    held: () => until('/b.xml is asked', () => held.length > 0),
    /** Answers the held /b.xml as the site now is. */
    release() {
      state.mode = 'ok';
      for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200).end(urlset(state.b));
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
export type TwoSitemapSite = Awaited<ReturnType<typeof twoSitemapSite>>;

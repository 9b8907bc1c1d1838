import type express from 'express';
import { SHOP_HERO_SVG, shopPage, type MainThreadWork } from './demo-site-shop-pages.ts';
import { gzipSitemap, plainSitemap, robotsTxt, SHOP_SITEMAPS, sitemapIndex } from './demo-site-shop-sitemaps.ts';

export { DEMO_SHOP_GROUPS, DEMO_SHOP_PATHS } from './demo-site-shop-pages.ts';
export { SHOP_SITEMAPS } from './demo-site-shop-sitemaps.ts';

/**
 * How a template made slow is slow: its pages answer late, and their main thread is busy before
 * the first paint (LCP: Lighthouse's simulation takes a site's server time from all its requests,
 * so one late page alone barely moves it) and after load (TBT).
 */
interface SlowTemplate extends MainThreadWork {
  /** Held back before the page's HTML is sent. */
  serverMs?: number;
}

export interface DemoShopControls {
  /**
   * Makes the pages whose path starts with `prefix` (`/shop/product/`) slow, for a group that
   * fails its budget; `null` makes every page fast again.
   */
  slowTemplate(prefix: string | null, slow?: SlowTemplate): void;
}

/** The demo shop's routes, on an app of its own origin (robots.txt is at the root). */
export function shopRoutes(app: express.Express): DemoShopControls {
  let slow: (SlowTemplate & { prefix: string }) | null = null;
  const originOf = (req: express.Request) => `${req.protocol}://${req.get('host') ?? 'localhost'}`;
  const xml = (res: express.Response, body: string) => res.type('application/xml').send(body);
  app.get('/robots.txt', (req, res) => res.type('text/plain').send(robotsTxt(originOf(req))));
  app.get(SHOP_SITEMAPS.index, (req, res) => xml(res, sitemapIndex(originOf(req))));
  app.get(SHOP_SITEMAPS.plain, (req, res) => xml(res, plainSitemap(originOf(req))));
  app.get(SHOP_SITEMAPS.gzip, (req, res) => res.type('application/gzip').send(gzipSitemap(originOf(req))));
  app.get('/img/hero.svg', (_req, res) =>
    res.type('image/svg+xml').set('Cache-Control', 'public, max-age=3600').send(SHOP_HERO_SVG),
  );
  app.get(/.*/, (req, res, next) => {
    const slowed = slow !== null && req.path.startsWith(slow.prefix) ? slow : null;
    const page = shopPage(req.path, slowed ?? {});
    if (page === undefined) {
      next();
      return;
    }
    setTimeout(() => res.type('html').set('Cache-Control', 'no-cache').send(page), slowed?.serverMs ?? 0);
  });
  return {
    slowTemplate(prefix, { serverMs = 1500, beforePaintMs = 600, afterLoadMs = 600 } = {}) {
      slow = prefix === null ? null : { prefix, serverMs, beforePaintMs, afterLoadMs };
    },
  };
}

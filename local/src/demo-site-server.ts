import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import express from 'express';
import { DEMO_SHOP_PATHS, shopRoutes, type DemoShopControls } from './demo-site-shop.ts';

/** The demo site's pages: what `perfwatch start` offers to measure, and the tests' fixture site. */
const DEMO_SITE_ROOT = join(import.meta.dirname, 'demo-site');

export interface DemoSite {
  /** Base URL, ending in `/`. */
  url: string;
  close(): Promise<void>;
}

/** The demo's login: a page behind it, and what lets a visitor in (perfwatch admin set-auth tries them). */
export const DEMO_LOGIN = {
  user: 'demo',
  password: 'correct horse battery staple',
  cookie: { name: 'pw_demo_session', value: 'signed-in-7f3a' },
  bearer: 'demo-bearer-5c1d',
} as const;

export interface DemoSiteOptions {
  root?: string;
  slowMs?: number;
  host?: string;
  port?: number;
  onRequest?: (request: { host: string; path: string; headers: Record<string, string | string[] | undefined> }) => void;
}

/** The demo shop: 200 pages in ten templates at the root of its own origin, with its sitemaps. */
export interface DemoShopSite extends DemoSite, DemoShopControls {
  /** Every page's URL. */
  pages: readonly string[];
}

/**
 * Serves the demo site (or another static site) on loopback: the fixture site of the tests, and
 * what `perfwatch start` offers to measure. `/slow.html` is held back `slowMs` to stand for a slow origin.
 * With `site: 'shop'` it serves the demo shop instead (see demo-site-shop.ts): a whole site to
 * discover, group and sample.
 */
export async function startDemoSite(
  options: Omit<DemoSiteOptions, 'root' | 'slowMs'> & { site: 'shop' },
): Promise<DemoShopSite>;
export async function startDemoSite(options?: DemoSiteOptions & { site?: 'fixture' }): Promise<DemoSite>;
export async function startDemoSite({
  site = 'fixture',
  host = '127.0.0.1',
  port = 0,
  onRequest,
  ...fixture
}: DemoSiteOptions & { site?: 'fixture' | 'shop' } = {}): Promise<DemoSite | DemoShopSite> {
  const app = express();
  app.disable('x-powered-by');
  if (onRequest) {
    app.use((req, _res, next) => {
      onRequest({ host: req.headers.host ?? '', path: req.path, headers: req.headers });
      next();
    });
  }
  const shop = site === 'shop' ? shopRoutes(app) : await fixtureRoutes(app, fixture);
  const server = app.listen(port, host);
  await once(server, 'listening');
  const { port: bound } = server.address() as AddressInfo;
  const url = `http://${host}:${bound}/`;
  const close = () =>
    new Promise<void>((resolve, reject) => {
      server.closeAllConnections();
      server.close((error) => (error ? reject(error) : resolve()));
    });
  if (shop === undefined) return { url, close };
  return {
    url,
    close,
    pages: DEMO_SHOP_PATHS.map((path) => new URL(path, url).href),
    slowTemplate: (prefix, slow) => shop.slowTemplate(prefix, slow),
  };
}

/** The fixture site's routes: its pages, the login, a redirect, and its assets. */
async function fixtureRoutes(
  app: express.Express,
  { root = DEMO_SITE_ROOT, slowMs = 1500 }: Pick<DemoSiteOptions, 'root' | 'slowMs'>,
): Promise<undefined> {
  loginPages(app);
  app.get('/slow.html', (_req, _res, next) => {
    setTimeout(next, slowMs);
  });
  const pages = await pagesIn(root);
  app.get(/\.html$|\/$/, (req, res, next) => {
    const page = pages.get(req.path);
    if (page === undefined) return next();
    res.type('html').set('Cache-Control', 'public, max-age=3600').send(page);
  });
  // A redirect to anywhere: lets tests follow a page that leads somewhere the agent must not go.
  app.get('/redirect', (req, res) => {
    res.redirect(302, String(req.query['to'] ?? '/'));
  });
  app.use(express.static(root, { maxAge: '1h' }));
  return undefined;
}

/**
 * The demo pages are kept as what differs between them: their head's own lines (title,
 * description, stylesheet) and their body. Each is served in one layout with what every page
 * needs (doctype, language, charset, viewport). A whole document (it starts with a doctype) is
 * served as it is.
 */
function inLayout(page: string): string {
  if (/^\s*<!doctype/i.test(page)) return page;
  const body = page.indexOf('<body');
  if (body < 0) throw new Error('a demo page has no <body>');
  const head = page
    .slice(0, body)
    .trim()
    .split('\n')
    .map((line) => `  ${line.trim()}\n`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
${head}</head>
${page.slice(body).trimEnd()}
</html>
`;
}

/** The site's pages by path, in their layout; `/` is index.html. */
async function pagesIn(root: string): Promise<Map<string, string>> {
  const pages = new Map<string, string>();
  for (const name of await readdir(root)) {
    if (name.endsWith('.html')) pages.set(`/${name}`, inLayout(await readFile(join(root, name), 'utf8')));
  }
  const index = pages.get('/index.html');
  if (index !== undefined) pages.set('/', index);
  return pages;
}

/**
 * A page behind a login: the session cookie the login sets, or a bearer token, lets a visitor
 * in; anyone else is sent to the login page. Its picture comes from another origin (localhost
 * for 127.0.0.1), where credentials must never go.
 */
function loginPages(app: express.Express): void {
  const signedIn = (req: express.Request) =>
    (req.headers.cookie ?? '').split(/;\s*/).includes(`${DEMO_LOGIN.cookie.name}=${DEMO_LOGIN.cookie.value}`) ||
    req.headers.authorization === `Bearer ${DEMO_LOGIN.bearer}`;
  app.get('/account/', (req, res) => {
    if (!signedIn(req)) {
      res.redirect(302, '/login.html');
      return;
    }
    const elsewhere = `http://localhost:${(req.socket.localPort ?? 0).toString()}`;
    res
      .type('html')
      .set('Cache-Control', 'no-store')
      .send(
        inLayout(`<meta name="description" content="A page only signed-in visitors see.">
<title>Your account — fixture</title>
<link rel="stylesheet" href="/assets/site.css">
<body><main><h1>Your account</h1><p>Signed in. Orders, invoices and settings would be here.</p><img src="${elsewhere}/assets/pixel.svg" alt="" width="8" height="8"></main></body>`),
      );
  });
  app.post('/login', express.urlencoded({ extended: false, limit: '4kb' }), (req, res) => {
    const body = req.body as Record<string, string | undefined>;
    if (body['user'] !== DEMO_LOGIN.user || body['password'] !== DEMO_LOGIN.password) {
      res.status(401).type('html').send('<!doctype html><title>Wrong password</title><p>Wrong user or password.</p>');
      return;
    }
    res
      .cookie(DEMO_LOGIN.cookie.name, DEMO_LOGIN.cookie.value, { httpOnly: true, sameSite: 'lax', path: '/' })
      .redirect(303, '/account/');
  });
}

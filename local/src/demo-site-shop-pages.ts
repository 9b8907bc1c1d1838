/**
 * The demo shop: a generated site of 200 pages in ten templates, the fixture of site discovery,
 * page groups and the site benchmark. Paths are fixed so every run, test and benchmark sees the
 * same site; each route is named as perfwatch infers it.
 */

interface DemoShopTemplate {
  /** What the pages are, for their titles. */
  kind: string;
  /** The route template the pages share; the fixed pages are each their own route. */
  route: string | null;
  paths: readonly string[];
}

const BLOG_WORDS = ['faster', 'smaller', 'calmer', 'cheaper', 'greener'];
const BLOG_TOPICS = ['images', 'fonts', 'scripts', 'caches', 'servers', 'layouts', 'budgets', 'builds'];
const CATEGORIES = [
  'garden-tools',
  'kitchen',
  'lighting',
  'bathroom',
  'bedding',
  'desks',
  'chairs',
  'rugs',
  'mirrors',
  'shelving',
  'outdoor',
  'storage',
  'curtains',
  'lamps',
  'cushions',
  'tableware',
  'cookware',
  'plants',
  'clocks',
  'frames',
];
const DOC_SECTIONS = ['getting-started', 'install', 'configuration', 'budgets', 'agents', 'api'];
const DOC_PAGES = ['before-you-begin', 'step-by-step', 'avoid-common-pitfalls', 'what-comes-next', 'see-also-links'];
const NEWS_YEARS = ['2022', '2023', '2024', '2025'];
const NEWS_STORIES = [
  'new-store-opens',
  'summer-sale-starts',
  'we-planted-trees',
  'shipping-gets-faster',
  'winter-range-lands',
];
const TEAM = ['alice', 'bruno', 'chen', 'dara', 'emeka', 'farah', 'greta', 'hiro', 'ines', 'jonas'];
const CITIES = ['london', 'paris', 'berlin', 'madrid', 'rome', 'vienna', 'lisbon', 'dublin', 'oslo', 'new-york'];

const times = (n: number, path: (i: number) => string) => Array.from({ length: n }, (_, i) => path(i + 1));

/** Ten templates: nine routes of many pages, and the fixed pages (`/`, `/about`). */
const DEMO_SHOP_TEMPLATES: readonly DemoShopTemplate[] = [
  { kind: 'Home and about', route: null, paths: ['/', '/about'] },
  { kind: 'Product', route: '/shop/product/:id', paths: times(40, (i) => `/shop/product/${(1000 + i).toString()}`) },
  { kind: 'Category', route: '/shop/category/:slug', paths: CATEGORIES.map((slug) => `/shop/category/${slug}`) },
  {
    kind: 'Blog post',
    route: '/blog/:slug',
    paths: BLOG_TOPICS.flatMap((topic) => BLOG_WORDS.map((word) => `/blog/${word}-${topic}-explained`)),
  },
  {
    kind: 'Documentation',
    route: '/docs/:slug/:slug2',
    paths: DOC_SECTIONS.flatMap((section) => DOC_PAGES.map((page) => `/docs/${section}/${page}`)),
  },
  { kind: 'Help article', route: '/help/:id', paths: times(20, (i) => `/help/${i.toString()}`) },
  {
    kind: 'News',
    route: '/news/:id/:slug',
    paths: NEWS_YEARS.flatMap((year) => NEWS_STORIES.map((story) => `/news/${year}/${story}`)),
  },
  { kind: 'Team member', route: '/team/:slug', paths: TEAM.map((name) => `/team/${name}`) },
  { kind: 'Store', route: '/stores/:slug', paths: CITIES.map((city) => `/stores/${city}`) },
  { kind: 'Event', route: '/events/:id', paths: times(8, (i) => `/events/${(300 + i).toString()}`) },
];

/** Every page's path, in the templates' order. */
export const DEMO_SHOP_PATHS: readonly string[] = DEMO_SHOP_TEMPLATES.flatMap(({ paths }) => paths);

/** The page groups perfwatch finds on the shop: each route, and each fixed page on its own. */
export const DEMO_SHOP_GROUPS: readonly { name: string; paths: readonly string[] }[] = DEMO_SHOP_TEMPLATES.flatMap(
  ({ route, paths }) =>
    route === null ? paths.map((path) => ({ name: path, paths: [path] })) : [{ name: route, paths }],
);

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0).toString()};`);

/** A long task on the main thread of `ms`. */
const busy = (ms: number) => `const end = performance.now() + ${ms.toString()}; while (performance.now() < end) {}`;

/** How a page of a template made slow is slow on the main thread. */
export interface MainThreadWork {
  /** A long task before the first paint: it delays FCP and LCP. */
  beforePaintMs?: number;
  /** A long task once loaded, after the first paint, where Lighthouse counts it in TBT. */
  afterLoadMs?: number;
}

const slowScripts = ({ beforePaintMs = 0, afterLoadMs = 0 }: MainThreadWork) =>
  (beforePaintMs > 0 ? `<script>{${busy(beforePaintMs)}}</script>\n` : '') +
  (afterLoadMs > 0
    ? `<script>addEventListener('load', () => setTimeout(() => { ${busy(afterLoadMs)} }, 0));</script>\n`
    : '');

/**
 * A page of the shop: a nav to the first page of each template, its own hero picture (the LCP
 * element), and links within its template: the first page of a template lists all its pages, so
 * a link crawl from `/` finds every page within two clicks.
 */
export function shopPage(path: string, work: MainThreadWork = {}): string | undefined {
  const template = DEMO_SHOP_TEMPLATES.find(({ paths }) => paths.includes(path));
  if (template === undefined) return undefined;
  const index = template.paths.indexOf(path);
  const title = path === '/' ? 'Demo shop' : `${template.kind} ${path.split('/').at(-1) ?? ''} — demo shop`;
  const nav = DEMO_SHOP_TEMPLATES.map(({ kind, paths }) => `<a href="${paths[0] ?? '/'}">${escapeHtml(kind)}</a>`);
  const hub =
    path === '/' ? DEMO_SHOP_TEMPLATES.map(({ paths }) => paths[0] ?? '/') : index === 0 ? template.paths : [];
  const next = template.paths[(index + 1) % template.paths.length] ?? '/';
  const links = [...new Set([...hub, next])].filter((link) => link !== path);
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="description" content="${escapeHtml(`${template.kind} page of perfwatch's demo shop.`)}">
  <title>${escapeHtml(title)}</title>
  <style>body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:48rem;padding:1rem}nav a,li a{display:inline-block;padding:.5rem}img{max-width:100%;height:auto}</style>
</head>
<body>
${slowScripts(work)}<header><nav>${nav.join(' ')}</nav></header>
<main>
  <h1>${escapeHtml(title)}</h1>
  <img src="/img/hero.svg" width="640" height="320" alt="${escapeHtml(template.kind)}">
  <p>A page of the demo shop, one of ${template.paths.length.toString()} of its kind.</p>
  <ul>${links.map((link) => `<li><a href="${link}">${escapeHtml(link)}</a></li>`).join('')}</ul>
</main>
</body>
</html>
`;
}

/** The hero picture every page shows: a small SVG, large on screen. */
export const SHOP_HERO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="320" viewBox="0 0 640 320"><rect width="640" height="320" fill="#2b6cb0"/><circle cx="320" cy="160" r="96" fill="#bee3f8"/></svg>`;

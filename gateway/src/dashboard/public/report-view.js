import { api } from './api.js';
import { h } from './dom.js';
import { rendererResult } from './renderer-result.js';
import { crumbs, link, show } from './page.js';

// The full Lighthouse report of one cell, drawn by Lighthouse's own renderer, which the gateway
// serves from the lighthouse package.

export async function reportView(params) {
  const [url, date, device, location] = ['url', 'date', 'device', 'location'].map((name) => params.get(name));
  const [result, renderer] = await Promise.all([
    api('audit', { url, date, device, location: [location] }),
    import('/dashboard/vendor/lighthouse-report.js'),
  ]);
  const lhr = result[device]?.[location]?.lighthouse;
  if (!lhr) throw new Error(`No ${device}/${location} result in the snapshot of ${date}.`);
  const container = h('div', { class: 'lighthouse-report' });
  show(`Lighthouse report of ${url}`, crumbs(url, h('a', { href: link('snapshot', { url, date }) }, date)), container);
  // Stored results leave out Lighthouse's i18n table (the renderer falls back to English); their
  // small WebP screenshots go as JPEG (renderer-result.js).
  container.append(
    renderer.renderReport(await rendererResult(lhr), {
      disableFireworks: true,
      disableDarkMode: true,
      omitTopbar: false,
    }),
  );
  // "Open in Viewer" and "Save as Gist" would post the result (of a page behind a login, maybe)
  // to googlechrome.github.io and GitHub: a self-hosted report keeps it here.
  for (const action of container.querySelectorAll('[data-action="open-viewer"], [data-action="save-gist"]'))
    action.remove();
}

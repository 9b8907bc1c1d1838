import { request } from './api.js';
import { h } from './dom.js';
import { link, show } from './page.js';

// The organisation's sites (issue 34): each a link to its page of groups.

export async function sitesView() {
  const { sites } = await request('GET', 'sites');
  const list = h('ul', { class: 'projects sites' });
  for (const site of sites)
    list.append(
      h(
        'li',
        { class: 'card', 'data-site': site.id },
        h('a', { href: link('site', { id: site.id }), class: 'site-link' }, site.origin),
        h(
          'p',
          { class: 'meta' },
          `${site.locations.join(', ')} · ${site.sampleSize} page${site.sampleSize === 1 ? '' : 's'} sampled per group${site.schedule ? ` · schedule ${site.schedule} (UTC)` : ''}`,
        ),
      ),
    );
  show(
    'Sites',
    h('h1', {}, 'Sites'),
    sites.length > 0
      ? list
      : h('p', {}, 'No sites yet: add one with ', h('code', {}, 'POST /v1/sites'), ' (its origin).'),
  );
}

import { api } from './api.js';
import { h } from './dom.js';
import { field, onSubmit } from './form-fields.js';
import { dataTable } from './page.js';

// The webhooks that announce this project's events (/v1/webhooks): those of this project and
// those of every project of the caller's, listed; added for this project (its signing secret
// shown once), removed.

/** Every webhook of the caller, page after page. */
async function allWebhooks() {
  const webhooks = [];
  let after;
  do {
    const page = await api('webhooks', { limit: 100, ...(after ? { after } : {}) });
    webhooks.push(...page.webhooks);
    after = page.next;
  } while (after);
  return webhooks;
}

function webhookRow(webhook, onRemove) {
  const remove = h('form', { class: 'inline' }, h('button', { type: 'submit', class: 'secondary' }, 'Remove'));
  onSubmit(remove, () => api('webhooks', { remove: webhook.id }), onRemove);
  const last = webhook.deliveries[0];
  return h(
    'tr',
    { 'data-webhook': webhook.id },
    h('td', { class: 'wrap' }, webhook.targetUrl),
    h('td', {}, webhook.format),
    h('td', {}, webhook.project ? 'this project' : 'every project'),
    h('td', {}, last ? `${last.event}: ${last.status}` : 'none yet'),
    h('td', {}, webhook.project ? remove : null),
  );
}

export async function webhooksSection(url) {
  const section = h('section', { id: 'webhooks' });
  const render = async (created) => {
    const mine = (await allWebhooks()).filter((w) => w.project === url || w.project === null);
    const targetUrl = h('input', { id: 'webhook-target', name: 'targetUrl', placeholder: 'https://hooks.example/…' });
    const format = h(
      'select',
      { id: 'webhook-format', name: 'format' },
      h('option', { value: 'json' }, 'json (signed payload)'),
      h('option', { value: 'slack' }, 'slack (incoming webhook)'),
    );
    const add = h(
      'form',
      { id: 'webhook-add', class: 'card settings' },
      field('targetUrl', 'Target URL', targetUrl, 'An https URL; budget events of this project are posted there.'),
      field('format', 'Format', format),
      h('button', { type: 'submit' }, 'Add webhook'),
    );
    onSubmit(
      add,
      () => api('webhooks', { targetUrl: targetUrl.value.trim(), project: url, format: format.value }),
      (answer) => render(answer.created),
    );
    section.replaceChildren(
      h('h2', {}, 'Webhooks'),
      created
        ? h(
            'p',
            { class: 'notice', id: 'webhook-secret', role: 'status' },
            'Webhook added. Its signing secret, shown this once: ',
            h('code', {}, created.secret),
          )
        : '',
      mine.length > 0
        ? dataTable(
            { class: 'webhooks' },
            ['Target', 'Format', 'Events of', 'Last delivery', ''],
            mine.map((w) => webhookRow(w, () => render())),
          )
        : h('p', { class: 'empty' }, 'No webhook announces this project’s events.'),
      add,
    );
  };
  await render();
  return section;
}

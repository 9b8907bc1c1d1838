import { ApiError, request } from './api.js';
import { h } from './dom.js';
import { field, onSubmit } from './form-fields.js';

// The project's link to its repository (/v1/projects/repository): shown without its secrets,
// replaced by PUT (the forge token and webhook secret typed each time), removed by DELETE.

const FORGES = ['github', 'gitlab', 'gitea'];

async function currentLink(url) {
  try {
    return await request('GET', 'projects/repository', { url });
  } catch (error) {
    // 404 here: the project (listed a moment ago) is linked to no repository.
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

function linkFields(link) {
  const input = (name, attributes = {}) =>
    h('input', { id: `repository-${name}`, name, spellcheck: 'false', autocomplete: 'off', ...attributes });
  return [
    field(
      'forge',
      'Forge',
      h(
        'select',
        { id: 'repository-forge', name: 'forge' },
        FORGES.map((f) => h('option', { value: f, selected: link?.forge === f }, f)),
      ),
    ),
    field(
      'repository',
      'Repository',
      input('repository', { value: link?.repository ?? '', placeholder: 'owner/name' }),
    ),
    field(
      'apiUrl',
      'API URL',
      input('apiUrl', { value: link?.apiUrl ?? '' }),
      'Default: GitHub’s or GitLab’s; required for Gitea.',
    ),
    field('token', 'Forge token', input('token', { type: 'password' }), 'Sealed at rest, never shown again.'),
    field(
      'webhookSecret',
      'Webhook secret',
      input('webhookSecret', { type: 'password' }),
      'The secret the forge’s webhook signs with.',
    ),
    field(
      'previewUrl',
      'Preview URL',
      input('previewUrl', { value: link?.previewUrl ?? '', placeholder: 'https://pr-{pullRequest}.preview.example' }),
    ),
    field(
      'defaultBranch',
      'Default branch',
      input('defaultBranch', { value: link?.defaultBranch ?? '', placeholder: 'main' }),
    ),
  ];
}

/** The form's values, empty optional ones left out (the API's defaults). */
function linkOf(form) {
  const names = ['forge', 'repository', 'apiUrl', 'token', 'webhookSecret', 'previewUrl', 'defaultBranch'];
  const values = names.map((name) => [name, form.elements.namedItem(name).value.trim()]);
  return Object.fromEntries(
    values.filter(([name, value]) => value !== '' || ['repository', 'token', 'webhookSecret'].includes(name)),
  );
}

export async function repositorySection(url) {
  const section = h('section', { id: 'repository' });
  const render = (link) => {
    const form = h(
      'form',
      { id: 'repository-form', class: 'card settings' },
      ...linkFields(link),
      h('button', { type: 'submit' }, link ? 'Replace link' : 'Link repository'),
    );
    onSubmit(form, () => request('PUT', 'projects/repository', { url, ...linkOf(form) }), render);
    const unlink = h(
      'form',
      { id: 'repository-unlink', class: 'inline' },
      h('button', { type: 'submit', class: 'secondary' }, 'Unlink'),
    );
    onSubmit(
      unlink,
      () => request('DELETE', 'projects/repository', { url }),
      () => render(null),
    );
    section.replaceChildren(
      h('h2', {}, 'Repository'),
      h(
        'p',
        { class: 'meta', id: 'repository-state' },
        link
          ? `Linked to ${link.forge} ${link.repository} (previews compared with ${link.defaultBranch}).`
          : 'Linked to no repository.',
      ),
      link ? unlink : '',
      form,
    );
  };
  render(await currentLink(url));
  return section;
}

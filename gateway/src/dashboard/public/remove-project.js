import { request } from './api.js';
import { h } from './dom.js';
import { field, onSubmit } from './form-fields.js';

// "Remove project": DELETE /v1/projects?url=, once the user has typed the project's URL: it
// removes every snapshot, result, annotation and the repository link with it.

export function removeProjectSection(url) {
  const confirmation = h('input', { id: 'remove-confirm', name: 'confirm', spellcheck: 'false', autocomplete: 'off' });
  const button = h('button', { type: 'submit', class: 'danger', disabled: true }, 'Remove project');
  confirmation.addEventListener('input', () => {
    button.disabled = confirmation.value.trim() !== url;
  });
  const form = h(
    'form',
    { id: 'remove-project', class: 'card settings danger-zone' },
    h('p', {}, 'Removes the project with all its snapshots, results, annotations and its repository link.'),
    field('confirm', `Type ${url} to confirm`, confirmation),
    button,
  );
  onSubmit(
    form,
    () => {
      if (confirmation.value.trim() !== url) throw new Error('Type the URL to confirm.');
      return request('DELETE', 'projects', { url });
    },
    () => {
      location.hash = '#/';
    },
  );
  return h('section', { id: 'remove' }, h('h2', {}, 'Remove project'), form);
}

import { api } from './api.js';
import { h } from './dom.js';
import { field, onSubmit } from './form-fields.js';
import { crumbs, link, show } from './page.js';
import { DEVICES, settingsFields, settingsOf } from './settings-form.js';

// "Add project": POST /v1/projects with a url and its settings. What the API refuses is shown
// beside the field it names; a viewer's 403 as their role's.

/** A new project's settings, without those left at the API's defaults (both devices, CrUX on). */
function newSettings(form) {
  const { devices, crux, ...settings } = settingsOf(form);
  return {
    ...settings,
    ...(devices.length === DEVICES.length ? {} : { devices }),
    ...(crux ? {} : { crux }),
  };
}

export function addProjectView() {
  const url = h('input', {
    id: 'new-url',
    name: 'url',
    required: true,
    placeholder: 'https://www.example.com/',
    spellcheck: 'false',
    autocomplete: 'url',
  });
  const form = h(
    'form',
    { id: 'add-project', class: 'card settings' },
    field('url', 'Page URL', url, 'The page measured; an absolute http(s) URL.'),
    ...settingsFields('new', null),
    h('button', { type: 'submit' }, 'Add project'),
  );
  onSubmit(
    form,
    () => api('projects', { url: url.value.trim(), ...newSettings(form) }),
    ({ project }) => {
      location.hash = link('project/settings', { url: project.url, added: '1' });
    },
  );
  show('Add project', crumbs(), h('h1', {}, 'Add project'), form);
  url.focus();
}

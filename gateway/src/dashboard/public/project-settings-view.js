import { api, ApiError, request } from './api.js';
import { h } from './dom.js';
import { onSubmit, refusedRole } from './form-fields.js';
import { budgetsSection } from './budgets-form.js';
import { credentialsSection } from './credentials-form.js';
import { flowSection } from './flow-form.js';
import { crumbs, link, show } from './page.js';
import { removeProjectSection } from './remove-project.js';
import { repositorySection } from './repository-form.js';
import { settingsFields, settingsOf } from './settings-form.js';
import { webhooksSection } from './webhooks-section.js';

// A project's settings page (#/project/settings?url=…): its settings (PATCH /v1/projects), budgets,
// user flow, page credentials, webhooks, repository link, and its removal. Each part reads and writes its
// own endpoint; a part the caller may not read says so and leaves the others be.

/** The settings that differ from the project's: what a PATCH sends. */
function changes(project, settings) {
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const current = {
    locations: project.locations,
    defaultLocation: project.defaultLocation,
    devices: project.devices ?? ['mobile', 'desktop'],
    runs: project.runs,
    schedule: project.schedule,
    crux: project.crux ?? true,
  };
  return Object.fromEntries(Object.entries(settings).filter(([name, value]) => !same(value, current[name])));
}

function settingsSection(project) {
  const saved = h('p', { class: 'saved', id: 'settings-saved', role: 'status' });
  const form = h(
    'form',
    { id: 'project-settings', class: 'card settings' },
    ...settingsFields('edit', project),
    h('button', { type: 'submit' }, 'Save settings'),
    saved,
  );
  onSubmit(
    form,
    async () => {
      saved.textContent = '';
      const changed = changes(project, settingsOf(form));
      if (Object.keys(changed).length === 0) return null;
      return request('PATCH', 'projects', { url: project.url, ...changed });
    },
    (answer) => {
      if (answer) Object.assign(project, answer.project);
      saved.textContent = answer ? 'Saved.' : 'Nothing changed.';
    },
  );
  return h('section', { id: 'settings' }, h('h2', {}, 'Settings'), form);
}

/** A part of the page, or what keeps the caller from reading it. */
async function part(id, title, build) {
  try {
    return await build();
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 401) throw error;
    const why = error.status === 403 ? refusedRole(error, 'see') : error.message;
    return h('section', { id }, h('h2', {}, title), h('p', { class: 'error', role: 'alert' }, why));
  }
}

export async function projectSettingsView(params) {
  const url = params.get('url');
  const { projects } = await api('projects');
  const project = projects.find((p) => p.url === url);
  if (!project) throw new Error(`No project of yours has the URL ${url}.`);
  const parts = await Promise.all([
    part('budgets', 'Budgets', () => budgetsSection(url)),
    part('flow', 'User flow', () => flowSection(url)),
    part('credentials', 'Credentials', () => credentialsSection(url)),
    part('webhooks', 'Webhooks', () => webhooksSection(url)),
    part('repository', 'Repository', () => repositorySection(url)),
  ]);
  show(
    `Settings · ${url}`,
    crumbs(url, h('a', { href: link('project/settings', { url }) }, 'Settings')),
    h('h1', { class: 'url' }, url),
    params.get('added') ? h('p', { class: 'notice', role: 'status' }, 'Project added.') : null,
    settingsSection(project),
    ...parts,
    removeProjectSection(url),
  );
}

import { api } from './api.js';
import { h } from './dom.js';
import { link, show } from './page.js';

export async function projectsView() {
  const { projects } = await api('projects');
  const list = h('ul', { class: 'projects' });
  for (const project of projects) {
    list.append(
      h(
        'li',
        { class: 'card' },
        h('a', { href: link('project', { url: project.url }), class: 'project-link' }, project.url),
        h(
          'p',
          { class: 'meta' },
          `${project.locations.join(', ')} · ${project.runs} run${project.runs === 1 ? '' : 's'} per update${project.schedule ? ` · schedule ${project.schedule} (UTC)` : ''}`,
          // Set only by projects that chose them (both devices and field data otherwise).
          project.devices?.length === 1 ? ` · ${project.devices[0]} only` : '',
          project.crux === false ? ' · no field data' : '',
        ),
      ),
    );
  }
  show(
    'Projects',
    h('h1', {}, 'Projects'),
    h('p', {}, h('a', { href: '#/add-project', class: 'button', id: 'add-project-link' }, 'Add project')),
    projects.length > 0
      ? list
      : h('p', {}, 'No projects yet: add one here, or with ', h('code', {}, 'perfwatch admin add-project'), '.'),
  );
}

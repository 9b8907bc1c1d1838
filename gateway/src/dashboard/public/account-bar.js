import { h } from './dom.js';
import { chooseOrganisation, ssoSession } from './sso-session.js';

/**
 * Who is signed in by single sign-on and the organisation the dashboard acts in, with their role
 * there; a choice of organisation when they have several. Null without such a session.
 */
export function accountBar(onSwitched) {
  const current = ssoSession.current();
  if (!current) return null;
  const { user, organisation, organisations } = current;
  const label = (org) => `${org.name} (${org.role})`;
  const here = organisations.find((org) => org.id === organisation);
  const choice =
    organisations.length > 1
      ? h(
          'select',
          {
            id: 'organisation',
            'aria-label': 'Organisation',
            onchange: async (event) => {
              if (await chooseOrganisation(event.target.value)) onSwitched();
            },
          },
          organisations.map((org) => h('option', { value: org.id, selected: org.id === organisation }, label(org))),
        )
      : h('span', { id: 'organisation' }, here ? label(here) : '');
  return h('span', { id: 'account', class: 'account' }, 'Signed in as ', h('strong', {}, user.name), ' · ', choice);
}

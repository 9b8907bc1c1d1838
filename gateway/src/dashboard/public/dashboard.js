import { ApiError, session } from './api.js';
import { accountBar } from './account-bar.js';
import { h } from './dom.js';
import { addProjectView } from './add-project-view.js';
import { auditLogView } from './audit-log-view.js';
import { compareView } from './compare-view.js';
import { refusedRole } from './form-fields.js';
import { show } from './page.js';
import { projectSettingsView } from './project-settings-view.js';
import { projectView } from './project-view.js';
import { projectsView } from './projects-view.js';
import { reportView } from './report-view.js';
import { siteView } from './site-view.js';
import { sitesView } from './sites-view.js';
import { signInView } from './sign-in-view.js';
import { snapshotView } from './snapshot-view.js';
import { tokensView } from './tokens-view.js';
import { forgetSsoSession, loadSsoSession, signOutSso, ssoSession } from './sso-session.js';

// perfwatch's dashboard: a token sign-in, the caller's projects, per project the latest scores
// per device and location, trends from /v1/overview, snapshots from /v1/audit, and the full
// Lighthouse report drawn by Lighthouse's own renderer. Routes live in the URL fragment.

const view = document.getElementById('view');
const signOutButton = document.getElementById('sign-out');

function failure(error) {
  if (error instanceof ApiError && error.status === 401) {
    session.signOut();
    forgetSsoSession();
    // Already there, no hashchange would show the sign-in.
    const home = location.hash === '' || location.hash === '#/';
    location.hash = '#/';
    if (home) route();
    return;
  }
  // A page the caller's role may not read (tokens, the audit log: admins'): said as their role's.
  const message = error instanceof ApiError && error.status === 403 ? refusedRole(error, 'see') : error.message;
  show('Error', h('p', { class: 'error', role: 'alert' }, message));
}

const ROUTES = {
  '': projectsView,
  project: projectView,
  snapshot: snapshotView,
  compare: compareView,
  report: reportView,
  'add-project': addProjectView,
  'project/settings': projectSettingsView,
  tokens: tokensView,
  'audit-log': auditLogView,
  sites: sitesView,
  site: siteView,
};

async function route() {
  const signedIn = Boolean(session.token() || ssoSession.current());
  signOutButton.hidden = !signedIn;
  // Who is signed in by single sign-on, beside "Sign out"; switching organisation shows the view again.
  document.getElementById('account')?.remove();
  const account = session.token() ? null : accountBar(route);
  if (account) signOutButton.before(account);
  if (!signedIn) return signInView(route);
  // Split at the first '?' only: a stable link (#/compare?…) may carry one unencoded in a value.
  const [path, query = ''] = location.hash.replace(/^#\/?/, '').split(/\?(.*)/s);
  const render = ROUTES[path] ?? projectsView;
  view.setAttribute('aria-busy', 'true');
  try {
    await render(new URLSearchParams(query));
  } catch (error) {
    failure(error);
  } finally {
    view.removeAttribute('aria-busy');
  }
}

signOutButton.addEventListener('click', async () => {
  session.signOut();
  await signOutSso();
  location.hash = '#/';
  route();
});
window.addEventListener('hashchange', route);
loadSsoSession().then(route);

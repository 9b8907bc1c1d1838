import { api, session } from './api.js';
import { rendererResult } from './renderer-result.js';
import { loadSsoSession, ssoSession } from './sso-session.js';

// Lighthouse's own flow report of one flow cell (issue 36), drawn by its renderer
// (lighthouse/dist/report/flow.js, served by the gateway): a page of its own, because that
// renderer draws into the page's <main>, styles the whole page and keeps the chosen step in the
// URL's fragment. The cell comes from /v1/audit as the dashboard reads it (this tab's token, or
// the single sign-on session); its parameters are in the query string.

const status = document.getElementById('flow-report-status');

function fail(message) {
  status.className = 'error';
  status.setAttribute('role', 'alert');
  status.replaceChildren(
    message,
    ' ',
    Object.assign(document.createElement('a'), { href: '/', textContent: 'Dashboard' }),
  );
}

/** A FlowResult as Lighthouse's flow report reads it: {name, steps: [{name, lhr}]}. */
async function flowResult(url, date, device, location, steps) {
  return {
    name: `${url} · ${date} UTC · ${device}/${location}`,
    steps: await Promise.all(
      steps.map(async (step) => ({ name: step.name, lhr: await rendererResult(step.lighthouse) })),
    ),
  };
}

async function main() {
  const params = new URLSearchParams(location.search);
  const [url, date, device, where] = ['url', 'date', 'device', 'location'].map((name) => params.get(name));
  await loadSsoSession();
  if (!session.token() && !ssoSession.current()) return fail('Sign in on the dashboard first.');
  const result = await api('audit', { url, date, device, location: [where] });
  const steps = result[device]?.[where]?.steps;
  if (!steps?.length) return fail(`No flow in the ${device}/${where} result of ${date}.`);
  document.title = `Flow report of ${url} · perfwatch`;
  // The renderer reads its input from this global, as in Lighthouse's standalone flow report.
  window.__LIGHTHOUSE_FLOW_JSON__ = await flowResult(url, date, device, where, steps);
  const renderer = document.createElement('script');
  renderer.src = '/dashboard/vendor/lighthouse-flow-report.js';
  renderer.addEventListener('load', () => (status.hidden = true));
  renderer.addEventListener('error', () => fail('The flow report renderer could not be loaded.'));
  document.body.append(renderer);
}

main().catch((error) => fail(error.message));

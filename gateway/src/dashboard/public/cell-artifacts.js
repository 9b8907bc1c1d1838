import { fetchOk, request } from './api.js';
import { h } from './dom.js';
import { artifactStates, artifactStateText, traceLink } from './artifact-links.js';
import { parseRequestLines } from './request-lines.js';
import { thirdPartiesTable } from './third-parties-table.js';
import { waterfall } from './waterfall.js';
import { firstPartiesOf } from './waterfall-rows.js';

// A snapshot cell's heavy evidence (issue 35): its artifacts' states, the median run's request
// waterfall and third parties (read from /v1/artifacts after the view is shown, so a snapshot
// opens without waiting on them), and its trace to download. The section's data-loaded turns
// "true" once everything it will show is in place.

/** Why there is no waterfall, when the requests are not kept. */
function noWaterfall(state) {
  const text = state
    ? `No request waterfall: the requests are ${artifactStateText(state)}.`
    : 'No requests were kept for this run.';
  return h('p', { class: 'artifact-absent', 'data-state': state?.state ?? 'none' }, text);
}

const failed = (what, error) => h('p', { class: 'error' }, `${what} could not be read: ${error.message}`);

/** The third parties' costs: read from the stored Lighthouse result, so shown even when the requests are not. */
async function loadThirdParties(params, area) {
  try {
    const { entities } = await request('GET', 'artifacts', { ...params, kind: 'third-parties' });
    area.replaceChildren(h('h3', {}, 'Third parties'), thirdPartiesTable(entities));
    return entities;
  } catch (error) {
    area.replaceChildren(h('h3', {}, 'Third parties'), failed('The third parties', error));
    return null;
  }
}

/** The waterfall, once the requests are read (and the third parties, which name the first party). */
async function loadWaterfall(params, area, thirdParties) {
  try {
    const response = await fetchOk('artifacts', { ...params, kind: 'requests' });
    const { requests, end } = parseRequestLines(await response.text());
    const firstParties = firstPartiesOf(requests, await thirdParties);
    area.replaceChildren(waterfall({ requests, end, firstParties }));
  } catch (error) {
    area.replaceChildren(failed('The requests', error));
  }
}

/** The cell's artifacts section; nothing for a snapshot from before artifacts were kept. */
export function cellArtifacts(url, date, device, location, artifacts) {
  if (!artifacts) return null;
  const params = { url, date, device, location };
  const waterfallArea = h('div', { class: 'waterfall-area' });
  const thirdPartiesArea = h('div', { class: 'third-parties-area' });
  const section = h(
    'section',
    { class: 'artifacts', 'data-loaded': 'false' },
    h('h3', {}, 'Requests and trace'),
    artifactStates(artifacts),
    artifacts.trace?.state === 'stored' ? traceLink(params) : null,
    waterfallArea,
    thirdPartiesArea,
  );
  const thirdParties = loadThirdParties(params, thirdPartiesArea);
  let waterfallRead = thirdParties;
  if (artifacts.requests?.state === 'stored') {
    waterfallArea.append(h('p', { class: 'meta' }, 'Reading the requests…'));
    waterfallRead = loadWaterfall(params, waterfallArea, thirdParties);
  } else waterfallArea.append(noWaterfall(artifacts.requests));
  Promise.all([thirdParties, waterfallRead]).finally(() => (section.dataset.loaded = 'true'));
  return section;
}

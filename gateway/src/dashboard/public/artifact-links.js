import { fetchOk } from './api.js';
import { formatBytes, h } from './dom.js';

// A cell's artifacts as its snapshot reports them (/v1/audit's `artifacts`): kept until when,
// missing and why, or expired; and the trace to download. Each kind's line carries
// data-artifact and data-state, so a script (or test) reads the state without the wording.

const KIND_NAMES = { requests: 'Requests', trace: 'Trace' };

/** What a state says, in words: "kept until …", "missing: …", "expired on …". */
export function artifactStateText(state) {
  if (state.state === 'stored') {
    const cut = state.truncated ? ', cut at its size bound' : '';
    return `${formatBytes(state.bytes)}${cut}, kept until ${state.expires} UTC`;
  }
  if (state.state === 'missing') return `missing: ${state.reason}`;
  return `expired on ${state.expired} UTC`;
}

/** The states of a cell's artifacts, one line a kind; nothing for a snapshot from before artifacts. */
export function artifactStates(artifacts) {
  const kinds = Object.keys(KIND_NAMES).filter((kind) => artifacts?.[kind]);
  if (kinds.length === 0) return null;
  return h(
    'ul',
    { class: 'artifact-states' },
    kinds.map((kind) =>
      h(
        'li',
        { 'data-artifact': kind, 'data-state': artifacts[kind].state },
        `${KIND_NAMES[kind]}: ${artifactStateText(artifacts[kind])}`,
      ),
    ),
  );
}

/**
 * "Download trace": the DevTools trace of the median run. The dashboard's token, or a session's
 * CSRF token, travels in a header, never in a URL, so a plain link would be refused: the click
 * fetches the file (the browser holds it whole, tens of MB at most) and hands it over as a
 * download. The href stays as the address to copy for curl with a token.
 */
export function traceLink(cellParams) {
  const params = { ...cellParams, kind: 'trace' };
  const name = `trace-${cellParams.device}-${cellParams.location}-${cellParams.date.replaceAll(':', '')}.json`;
  const status = h('span', { class: 'meta download-status', role: 'status' });
  const link = h(
    'a',
    {
      class: 'button secondary',
      href: `/v1/artifacts?${new URLSearchParams(params)}`,
      download: name,
      'data-artifact-link': 'trace',
      title:
        'The DevTools trace of the median run: open it in Chrome DevTools (Performance panel, "Load profile") or in Perfetto (ui.perfetto.dev)',
    },
    'Download trace',
  );
  link.addEventListener('click', async (event) => {
    event.preventDefault();
    status.textContent = ' Downloading…';
    try {
      const response = await fetchOk('artifacts', params);
      // The gateway's name for it when it gives one (Content-Disposition), else ours.
      const given = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') ?? '')?.[1];
      saveFile(await response.blob(), given ?? name);
      status.textContent = '';
    } catch (error) {
      status.textContent = ` Not downloaded: ${error.message}`;
    }
  });
  return h('p', { class: 'trace-download' }, link, status);
}

function saveFile(blob, name) {
  const url = URL.createObjectURL(blob);
  const anchor = h('a', { href: url, download: name, hidden: true });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  // The download has its own copy once started; a minute is ample.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

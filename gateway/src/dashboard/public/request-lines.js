// The requests artifact as the agent writes it (agent/src/artifact-capture.ts): NDJSON, one
// request a line in Lighthouse's order, then `{"end":true,"requests":N,"written":M,"truncated":bool}`.
// Read here without trusting it: every field a view uses is checked for its type, so a line
// of another shape draws as an empty bar rather than breaking the page.

const number = (value) => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
const string = (value) => (typeof value === 'string' ? value : undefined);

/** One request line, its fields of the right type or undefined. */
function requestOf(line) {
  return {
    url: string(line.url) ?? '',
    rendererStartTime: number(line.rendererStartTime),
    networkRequestTime: number(line.networkRequestTime),
    networkEndTime: number(line.networkEndTime),
    transferSize: number(line.transferSize),
    resourceSize: number(line.resourceSize),
    statusCode: number(line.statusCode),
    mimeType: string(line.mimeType),
    resourceType: string(line.resourceType),
    priority: string(line.priority),
    entity: string(line.entity),
    isLinkPreload: line.isLinkPreload === true,
    fromMainFrame: line.experimentalFromMainFrame === true,
    lcp: line.lcp === true,
  };
}

/**
 * The artifact's text → its requests and its end line (null when the text stops before it: the
 * artifact was cut in transit, and the view says it may be incomplete).
 */
export function parseRequestLines(text) {
  const requests = [];
  let end = null;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    const line = JSON.parse(raw);
    if (line === null || typeof line !== 'object') continue;
    if (line.end === true) {
      end = {
        requests: number(line.requests) ?? requests.length,
        written: number(line.written) ?? requests.length,
        truncated: line.truncated === true,
      };
      break;
    }
    requests.push(requestOf(line));
  }
  return { requests, end };
}

/** When a request started on the network (else when the renderer asked for it), in ms from navigation. */
export const startOf = (request) => request.networkRequestTime ?? request.rendererStartTime ?? 0;

/** When it ended; a request without an end (never finished) is drawn a sliver long. */
export const endOf = (request) => Math.max(request.networkEndTime ?? startOf(request), startOf(request));

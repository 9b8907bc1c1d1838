import { startOf } from './request-lines.js';

// What the waterfall draws, row by row: the requests grouped by entity (Lighthouse's
// third-party classification), the page's own first, then the third parties costing most
// bytes; within a group, by start. A big page's groups are cut to their first rows until the
// reader asks for all, so a page of 5,000 requests opens at once.

/** A group longer than this shows its first GROUP_ROWS rows until expanded… */
const GROUP_ROWS = 25;
/** …and a waterfall of this many requests or fewer is always shown whole. */
const WHOLE_UP_TO = 300;

export const NO_ENTITY = '';

/**
 * The entities that are the page's own: those the third-parties table marks so, and the entity
 * of the page's document (the first Document request, else the first request) in any case.
 */
export function firstPartiesOf(requests, thirdParties) {
  const named = (thirdParties ?? []).filter((e) => e.firstParty).map((e) => e.entity);
  const document = requests.find((r) => r.resourceType === 'Document') ?? requests[0];
  return new Set(document?.entity ? [...named, document.entity] : named);
}

/** Each entity's requests, sorted by start, and its totals. */
function groupsOf(requests, firstParties) {
  const byEntity = new Map();
  for (const request of requests) {
    const entity = request.entity ?? NO_ENTITY;
    if (!byEntity.has(entity)) byEntity.set(entity, []);
    byEntity.get(entity).push(request);
  }
  return [...byEntity].map(([entity, members]) => ({
    entity,
    firstParty: firstParties.has(entity),
    requests: members.sort((a, b) => startOf(a) - startOf(b)),
    bytes: members.reduce((sum, r) => sum + (r.transferSize ?? 0), 0),
  }));
}

/** First party first, requests of no entity last, the third parties between by bytes, most first. */
function groupOrder(a, b) {
  const rank = (g) => (g.firstParty ? 0 : g.entity === NO_ENTITY ? 2 : 1);
  return rank(a) - rank(b) || b.bytes - a.bytes || a.entity.localeCompare(b.entity);
}

/**
 * The groups to draw, each with the requests shown and how many are hidden. Collapsed, a long
 * group keeps its first rows and the LCP element's request wherever it is.
 */
export function waterfallGroups(requests, firstParties, expanded) {
  const collapse = !expanded && requests.length > WHOLE_UP_TO;
  return groupsOf(requests, firstParties)
    .sort(groupOrder)
    .map((group) => {
      const shown = collapse ? group.requests.filter((r, index) => index < GROUP_ROWS || r.lcp) : group.requests;
      return { ...group, shown, hidden: group.requests.length - shown.length };
    });
}

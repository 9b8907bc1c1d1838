import type {
  RequestChange,
  RequestsDiff,
  ThirdPartyChange,
  ThirdPartyCost,
  ThirdPartySummary,
} from '@perfwatch/common';
import type { ComparedRequest, RequestSide } from './request-lines.ts';

/**
 * What changed between two snapshots' requests and third parties (docs/artifacts.md,
 * "Comparing requests"). Requests are matched by requestKey (their URL without cache busters);
 * a URL requested n times on one side and m on the other pairs its first min(n, m) in order,
 * the rest are added or removed.
 */

/** Requests listed per kind of change, the largest first. */
export const MAX_REQUEST_CHANGES = 50;
/** Third parties listed, the largest change first. */
const MAX_THIRD_PARTY_CHANGES = 50;

/**
 * A change that is more than run-to-run noise: at least `floor` and at least `share` of the
 * earlier value. Bytes: 10 KiB and 20% (a script that gained a dependency, an image that lost its
 * compression — not a header's few bytes); times: 100 ms and 20% for a request's duration, 50 ms
 * and 20% for a third party's main-thread and blocking time (a long task's own threshold).
 */
const BYTES = { floor: 10 * 1024, share: 0.2 };
const REQUEST_MS = { floor: 100, share: 0.2 };
const THIRD_PARTY_MS = { floor: 50, share: 0.2 };

const grew = (from: number, to: number, rule: { floor: number; share: number }) =>
  to - from >= Math.max(rule.floor, rule.share * from);
const moved = (from: number, to: number, rule: { floor: number; share: number }) =>
  Math.abs(to - from) >= Math.max(rule.floor, rule.share * Math.min(from, to));

const sideOf = (r: ComparedRequest) => ({ transferSize: r.transferSize, duration: r.duration });

function change(r: ComparedRequest, sides: Pick<RequestChange, 'from' | 'to'>): RequestChange {
  return {
    url: r.url,
    ...(r.entity ? { entity: r.entity } : {}),
    ...(r.resourceType ? { resourceType: r.resourceType } : {}),
    ...sides,
  };
}

function byKey(requests: readonly ComparedRequest[]): Map<string, ComparedRequest[]> {
  const map = new Map<string, ComparedRequest[]>();
  for (const r of requests) {
    const list = map.get(r.key);
    if (list) list.push(r);
    else map.set(r.key, [r]);
  }
  return map;
}

const largest = (a: RequestChange, b: RequestChange) =>
  (b.to?.transferSize ?? b.from?.transferSize ?? 0) - (a.to?.transferSize ?? a.from?.transferSize ?? 0) ||
  a.url.localeCompare(b.url);
const growth = (c: RequestChange) => ({
  bytes: (c.to?.transferSize ?? 0) - (c.from?.transferSize ?? 0),
  ms: (c.to?.duration ?? 0) - (c.from?.duration ?? 0),
});
const mostGrown = (a: RequestChange, b: RequestChange) =>
  growth(b).bytes - growth(a).bytes || growth(b).ms - growth(a).ms || a.url.localeCompare(b.url);

/** Requests added, removed and grown from `from` to `to`, at most MAX_REQUEST_CHANGES of each. */
export function diffRequests(from: RequestSide, to: RequestSide): RequestsDiff & { truncated?: true } {
  const before = byKey(from.requests);
  const added: RequestChange[] = [];
  const grown: RequestChange[] = [];
  for (const [key, afters] of byKey(to.requests)) {
    const befores = before.get(key) ?? [];
    afters.forEach((after, i) => {
      const earlier = befores[i];
      if (!earlier) added.push(change(after, { to: sideOf(after) }));
      else if (
        grew(earlier.transferSize, after.transferSize, BYTES) ||
        grew(earlier.duration, after.duration, REQUEST_MS)
      )
        grown.push(change(after, { from: sideOf(earlier), to: sideOf(after) }));
    });
    before.set(key, befores.slice(afters.length));
  }
  const removed = [...before.values()].flat().map((r) => change(r, { from: sideOf(r) }));
  return {
    added: added.sort(largest).slice(0, MAX_REQUEST_CHANGES),
    removed: removed.sort(largest).slice(0, MAX_REQUEST_CHANGES),
    grown: grown.sort(mostGrown).slice(0, MAX_REQUEST_CHANGES),
    // A side cut short: what lay past the cut looks added or removed.
    ...(from.truncated || to.truncated ? { truncated: true as const } : {}),
  };
}

const costOf = ({ transferSize, mainThreadTime, blockingTime, requests }: ThirdPartySummary): ThirdPartyCost => ({
  transferSize,
  mainThreadTime,
  blockingTime,
  requests,
});

function costChanged(from: ThirdPartyCost, to: ThirdPartyCost): boolean {
  return (
    moved(from.transferSize, to.transferSize, BYTES) ||
    moved(from.mainThreadTime, to.mainThreadTime, THIRD_PARTY_MS) ||
    moved(from.blockingTime, to.blockingTime, THIRD_PARTY_MS)
  );
}

/** How far a change moves the page, for ordering: time first (what users wait on), then bytes. */
function weight({ from, to }: ThirdPartyChange): [number, number] {
  const ms = (c: ThirdPartyCost | null) => (c ? c.mainThreadTime + c.blockingTime : 0);
  return [Math.abs(ms(to) - ms(from)), Math.abs((to?.transferSize ?? 0) - (from?.transferSize ?? 0))];
}

/**
 * Third parties (never the first party) that appeared, went, or whose bytes, main-thread or
 * blocking time moved beyond the rules above, either way; the largest change first.
 */
export function thirdPartyChanges(
  from: readonly ThirdPartySummary[],
  to: readonly ThirdPartySummary[],
): ThirdPartyChange[] {
  const first = new Set([...from, ...to].filter((e) => e.firstParty).map((e) => e.entity));
  const before = new Map(from.filter((e) => !first.has(e.entity)).map((e) => [e.entity, costOf(e)]));
  const after = new Map(to.filter((e) => !first.has(e.entity)).map((e) => [e.entity, costOf(e)]));
  const changes: ThirdPartyChange[] = [];
  for (const entity of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(entity) ?? null;
    const b = after.get(entity) ?? null;
    if (!a || !b || costChanged(a, b)) changes.push({ entity, from: a, to: b });
  }
  return changes
    .map((c) => ({ c, w: weight(c) }))
    .sort((x, y) => y.w[0] - x.w[0] || y.w[1] - x.w[1] || x.c.entity.localeCompare(y.c.entity))
    .map(({ c }) => c)
    .slice(0, MAX_THIRD_PARTY_CHANGES);
}

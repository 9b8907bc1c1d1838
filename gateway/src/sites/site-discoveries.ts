import type { Logger } from 'pino';
import pLimit from 'p-limit';
import type { TargetGuard } from '@perfwatch/common';
import type { DiscoveryBounds } from './discovery/discovery-bounds.ts';
import {
  discoveryState,
  pendingDiscovery,
  runSiteDiscovery,
  type SiteDiscoveryOutcome,
  type SiteDiscoveryStore,
} from './site-discovery-run.ts';
import type { SiteRecord } from './store/sites-store.ts';

type Outcome = SiteDiscoveryOutcome | null;

/** A gateway's discoveries in the background: one at a time per site, all ended when it stops. */
export interface SiteDiscoveries {
  /**
   * Starts a discovery of the site (the site shows it `pending` at once); asked while one runs,
   * it runs once more after that one ends, with the site's record as it is then (asks meanwhile
   * share that one). Resolves when it ends (null: it failed, was cancelled or the site removed).
   * Never rejects: a failure is the site's state. `then`: work after it (the schedule's
   * updates), waited for by stop().
   */
  start(site: SiteRecord, then?: () => Promise<void>): Promise<Outcome>;
  /** Ends the site's running discovery, writing nothing, and its follow-up (the site is being removed). */
  cancel(siteId: string): Promise<void>;
  /** Ends the running discoveries and waits for them. */
  stop(): Promise<void>;
}

export interface SiteDiscoveriesDeps {
  store: SiteDiscoveryStore;
  guard: TargetGuard;
  logger: Logger;
  bounds?: Partial<DiscoveryBounds>;
  /** Discoveries running at once across sites (MAX_SITE_DISCOVERIES_AT_ONCE); the others wait in order. */
  maxAtOnce?: number;
}

/** The one discovery asked while a site's runs: its `then`s, and whoever waits for it. */
interface FollowUp extends PromiseWithResolvers<Outcome> {
  thens: Array<() => Promise<void>>;
}

interface Run {
  userId: string;
  abort: AbortController;
  next: FollowUp | null;
  done: Promise<Outcome>;
}

export function createSiteDiscoveries(deps: SiteDiscoveriesDeps): SiteDiscoveries {
  const { store, logger } = deps;
  const stopping = new AbortController();
  // Each discovery holds sockets and up to 50,000 URLs for up to two minutes: a gateway asked for
  // many sites at once (a schedule shared by many) takes them a few at a time.
  const limit = pLimit(deps.maxAtOnce ?? 2);
  const running = new Map<string, Run>();
  const discover = siteDiscovery(deps, stopping.signal);

  function launch(load: () => Promise<SiteRecord | null>, id: string, userId: string, thens: FollowUp['thens']) {
    const run: Run = { userId, abort: new AbortController(), next: null, done: Promise.resolve(null) };
    const signal = AbortSignal.any([stopping.signal, run.abort.signal]);
    running.set(id, run);
    run.done = (async () => {
      const site = await load();
      if (!site || signal.aborted) return null;
      await store.setSiteDiscovery(site.id, pendingDiscovery(new Date()));
      const outcome = await limit(() => discover(site, signal, () => run.next !== null));
      if (!signal.aborted) for (const then of thens) await then();
      return outcome;
    })()
      .catch((error: unknown) => {
        logger.warn({ site: id, err: { message: (error as Error).message } }, 'after a site discovery');
        return null;
      })
      .finally(() => followUp(id, run));
    return run.done;
  }

  function followUp(id: string, run: Run): void {
    running.delete(id);
    const { next } = run;
    if (!next) return;
    if (stopping.signal.aborted || run.abort.signal.aborted) next.resolve(null);
    else next.resolve(launch(() => store.findSite(run.userId, id), id, run.userId, next.thens));
  }

  return {
    start(site, then) {
      if (stopping.signal.aborted) return Promise.resolve(null);
      const thens = then ? [then] : [];
      const run = running.get(site.id);
      if (!run) return launch(() => Promise.resolve(site), site.id, site.userId, thens);
      run.next ??= { ...Promise.withResolvers<Outcome>(), thens: [] };
      run.next.thens.push(...thens);
      return run.next.promise;
    },
    async cancel(siteId) {
      const run = running.get(siteId);
      if (!run) return;
      run.next?.resolve(null);
      run.next = null;
      run.abort.abort();
      await run.done;
    },
    async stop() {
      stopping.abort();
      await Promise.all([...running.values()].map((run) => run.done));
    },
  };
}

/**
 * One discovery and the state it leaves on its site: its outcome, or why it failed; nothing when
 * it was cancelled or its site removed, and `pending` still when another is to follow (`followed`):
 * whoever asked for that one waits for its outcome, not this one's.
 */
function siteDiscovery({ store, guard, logger, bounds }: SiteDiscoveriesDeps, stopping: AbortSignal) {
  return async (site: SiteRecord, signal: AbortSignal, followed: () => boolean): Promise<Outcome> => {
    try {
      // Ended while it waited its turn: not started at all.
      signal.throwIfAborted();
      const outcome = await runSiteDiscovery(site, { store, guard, signal, ...(bounds ? { bounds } : {}) });
      if (outcome === null && stopping.aborted) throw new Error('the gateway stopped');
      if (outcome === null) return null;
      if (!followed()) await store.setSiteDiscovery(site.id, discoveryState(new Date(), outcome));
      const { added, gone, groups, complete } = outcome;
      logger.info({ site: site.id, added: added.length, gone: gone.length, groups, complete }, 'site discovered');
      return outcome;
    } catch (error) {
      if (signal.aborted && !stopping.aborted) return null;
      const reason = stopping.aborted ? 'the gateway stopped' : String((error as Error).message ?? error);
      logger.warn({ site: site.id, err: { message: reason } }, 'site discovery failed');
      await store
        .setSiteDiscovery(site.id, discoveryState(new Date(), { failed: reason.slice(0, 300) }))
        .catch(() => undefined);
      return null;
    }
  };
}

import type { Logger } from 'pino';
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

/** A gateway's discoveries in the background: one at a time per site, all ended when it stops. */
export interface SiteDiscoveries {
  /**
   * Starts a discovery of the site unless one runs (the site shows it `pending` at once);
   * resolves when it ends (null: one was running already, or it failed). Never rejects: a failure
   * is the site's state. `then`: work after it (the schedule's updates), waited for by stop().
   */
  start(site: SiteRecord, then?: () => Promise<void>): Promise<SiteDiscoveryOutcome | null>;
  /** Ends the running discoveries and waits for them. */
  stop(): Promise<void>;
}

export interface SiteDiscoveriesDeps {
  store: SiteDiscoveryStore;
  guard: TargetGuard;
  logger: Logger;
  bounds?: Partial<DiscoveryBounds>;
}

export function createSiteDiscoveries({ store, guard, logger, bounds }: SiteDiscoveriesDeps): SiteDiscoveries {
  const stopping = new AbortController();
  const running = new Map<string, Promise<SiteDiscoveryOutcome | null>>();

  async function discover(site: SiteRecord): Promise<SiteDiscoveryOutcome | null> {
    await store.setSiteDiscovery(site.id, pendingDiscovery(new Date()));
    try {
      const deps = { store, guard, signal: stopping.signal, ...(bounds ? { bounds } : {}) };
      const outcome = await runSiteDiscovery(site, deps);
      await store.setSiteDiscovery(site.id, discoveryState(new Date(), outcome));
      logger.info(
        { site: site.id, added: outcome.added.length, gone: outcome.gone.length, groups: outcome.groups },
        'site discovered',
      );
      return outcome;
    } catch (error) {
      const reason = stopping.signal.aborted ? 'the gateway stopped' : String((error as Error).message ?? error);
      logger.warn({ site: site.id, err: { message: reason } }, 'site discovery failed');
      await store
        .setSiteDiscovery(site.id, discoveryState(new Date(), { failed: reason.slice(0, 300) }))
        .catch(() => undefined);
      return null;
    }
  }

  return {
    start(site, then) {
      if (running.has(site.id) || stopping.signal.aborted) return Promise.resolve(null);
      const run = discover(site)
        .then(async (outcome) => {
          if (then && !stopping.signal.aborted) await then();
          return outcome;
        })
        .catch((error: unknown) => {
          logger.warn({ site: site.id, err: { message: (error as Error).message } }, 'after a site discovery');
          return null;
        })
        .finally(() => running.delete(site.id));
      running.set(site.id, run);
      return run;
    },
    async stop() {
      stopping.abort();
      await Promise.all(running.values());
    },
  };
}

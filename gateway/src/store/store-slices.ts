import type { AccountsStore } from '../accounts/store/accounts-store.ts';
import type { WebhooksStore } from '../alerts/store/webhooks-store.ts';
import type { AuditLogStore } from '../audit-log/store/audit-log-store.ts';
import type { ForgeStore } from '../forge/store/forge-store.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SchedulingStore } from '../scheduling/store/scheduling-store.ts';
import type { AnnotationsStore } from '../snapshots/store/annotations-store.ts';
import type { KpisStore } from '../snapshots/store/kpis-store.ts';
import type { SnapshotReadsStore, SnapshotsStore } from '../snapshots/store/snapshots-store.ts';
import type { TeamsStore } from '../teams/store/teams-store.ts';
import type { SsoStore } from '../sso/store/sso-store.ts';
import type { SitesStore } from '../sites/store/sites-store.ts';
import type { SiteUpdatesStore } from '../sites/store/site-updates-store.ts';
import type { UpdatesStore } from '../updates/store/updates-store.ts';

/** One backend's slices, in the order of the `Store` they make together (store.ts). */
export type StoreSlices = readonly [
  AccountsStore,
  ProjectsStore,
  UpdatesStore,
  SnapshotsStore,
  SnapshotReadsStore,
  KpisStore,
  AnnotationsStore,
  WebhooksStore,
  SchedulingStore,
  ForgeStore,
  TeamsStore,
  AuditLogStore,
  SsoStore,
  SitesStore,
  SiteUpdatesStore,
];

/**
 * Puts each slice's methods on `store`, bound to their slice: a backend's store is its slices
 * side by side, each a class of its own over the one connection or file.
 */
export function combineSlices(store: object, slices: StoreSlices): void {
  putMethods(store, slices);
}

/** Each of `parts`' methods on `target`, bound to its part; two parts may not name the same method. */
export function putMethods(target: object, parts: readonly object[]): void {
  const methods = target as Record<string, unknown>;
  for (const part of parts) {
    const own = part as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(part))) {
      const method = own[name];
      if (name === 'constructor' || typeof method !== 'function') continue;
      if (name in methods) throw new Error(`two slices of the store name ${name}`);
      methods[name] = method.bind(part);
    }
  }
}

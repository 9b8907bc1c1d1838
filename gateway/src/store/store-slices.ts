import type { AccountsStore } from '../accounts/store/accounts-store.ts';
import type { WebhooksStore } from '../alerts/store/webhooks-store.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SchedulingStore } from '../scheduling/store/scheduling-store.ts';
import type { AnnotationsStore } from '../snapshots/store/annotations-store.ts';
import type { KpisStore } from '../snapshots/store/kpis-store.ts';
import type { SnapshotReadsStore, SnapshotsStore } from '../snapshots/store/snapshots-store.ts';
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
];

/**
 * Puts each slice's methods on `store`, bound to their slice: a backend's store is its slices
 * side by side, each a class of its own over the one connection or file. Two slices may not
 * name the same method.
 */
export function combineSlices(store: object, slices: StoreSlices): void {
  const target = store as Record<string, unknown>;
  for (const slice of slices) {
    const methods = slice as unknown as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(slice))) {
      const method = methods[name];
      if (name === 'constructor' || typeof method !== 'function') continue;
      if (name in target) throw new Error(`two slices of the store name ${name}`);
      target[name] = method.bind(slice);
    }
  }
}

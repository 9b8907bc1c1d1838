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
import type { UnreadableRecords } from './unreadable-records.ts';

// Each feature folder owns its slice of the store: its records, its interface, the rules both
// backends share. Re-exported here for the modules that name records by the store's module.
export * from '../accounts/store/accounts-store.ts';
export * from '../alerts/store/webhooks-store.ts';
export * from '../audit-log/store/audit-log-store.ts';
export * from '../forge/store/forge-store.ts';
export * from '../projects/store/projects-store.ts';
export * from '../scheduling/store/scheduling-store.ts';
export * from '../snapshots/store/annotations-store.ts';
export * from '../snapshots/store/kpis-store.ts';
export * from '../snapshots/store/snapshots-store.ts';
export * from '../teams/store/teams-store.ts';
export * from '../sso/store/sso-store.ts';
export * from '../sites/store/sites-store.ts';
export * from '../sites/store/site-updates-store.ts';
export * from '../updates/store/updates-store.ts';

/** Runs finished of those planned, per device and location: the API's shape, kept as it is. */
export type { UpdateProgress } from '@perfwatch/common';

/** The store as a whole: its connection or file, and what the programs keep beside the data. */
export interface StoreBase {
  /** Records the list reads skipped because they could not be parsed (see unreadable-records.ts). */
  readonly unreadable: UnreadableRecords;
  init(): Promise<void>;
  close(): Promise<void>;
  ping(): Promise<void>;
  /** A small named value the programs keep beside the data (the prefix of `perfwatch start`'s last token). */
  readNote(key: string): Promise<string | null>;
  writeNote(key: string, value: string): Promise<void>;
}

/**
 * Persistence of users, tokens, projects, updates, snapshots and alerts: every slice, built on
 * one MongoDB connection (MongoStore) or one SQLite file (SqliteStore), both passing the same
 * contract suites. Only the wiring takes it whole; a module takes the slices it uses.
 */
export type Store = StoreBase &
  AccountsStore &
  ProjectsStore &
  UpdatesStore &
  SnapshotsStore &
  SnapshotReadsStore &
  KpisStore &
  AnnotationsStore &
  WebhooksStore &
  SchedulingStore &
  ForgeStore &
  TeamsStore &
  AuditLogStore &
  SsoStore &
  SitesStore &
  SiteUpdatesStore;

/**
 * The store had no room for a write (the embedded store's disk or database is full): nothing of
 * it was kept, and the same write may succeed once there is room again.
 */
export class StoreFull extends Error {
  constructor(where: string, options?: { cause?: unknown }) {
    super(`the store at ${where} is full: the write was not kept`, options);
    this.name = 'StoreFull';
  }
}

/** Raised when a unique name or URL is taken. */
export class DuplicateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateError';
  }
}

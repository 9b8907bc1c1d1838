import type { CruxRecord, Device, KpiRecord, LighthouseResult, Location, RunSummary, UpdateType } from '@perfwatch/common';

export interface UserRecord {
  id: string;
  name: string;
  createdAt: Date;
}

export interface TokenRecord {
  prefix: string;
  userId: string;
  digest: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface ProjectRecord {
  id: string;
  userId: string;
  url: string;
  domain: string;
  locations: Location[];
  defaultLocation: Location;
  runs: number;
  schedule: string | null;
  createdAt: Date;
}

export type NewProject = Omit<ProjectRecord, 'id' | 'createdAt'>;

export interface CruxPair {
  url: CruxRecord | null;
  origin?: CruxRecord;
}

/** The result of one (device, location) in a snapshot. */
export interface LocationSnapshot {
  device: Device;
  location: Location;
  /** 1-based index of the representative run among `runs`. */
  median: number;
  runs: RunSummary[];
  lighthouse: LighthouseResult;
  crux: CruxPair;
  elementCount: number | null;
  kpis: KpiRecord[];
}

export interface NewSnapshot {
  project: ProjectRecord;
  updateId: string;
  /** Wanted date, whole second; the store moves it on by a second if the project already has one then. */
  date: Date;
  updateType: UpdateType;
  results: LocationSnapshot[];
}

export interface SnapshotRecord {
  id: string;
  projectId: string;
  updateId: string;
  url: string;
  date: Date;
  updateType: UpdateType;
  /** Every (device, location) that has a result, whatever a read filters. */
  available: Array<{ device: Device; location: Location }>;
  results: LocationSnapshot[];
}

export interface SnapshotFilter {
  device?: Device;
  locations?: Location[];
}

export interface OverviewFilter {
  userId: string;
  from: Date;
  /** Exclusive. */
  to: Date;
  domain?: string;
  updateType?: UpdateType;
  /** Upper-case section names. */
  sections?: string[];
}

export interface KpiRow {
  date: Date;
  domain: string;
  url: string;
  device: Device;
  location: Location;
  updateType: UpdateType;
  section: string;
  kpi: string;
  data: Record<string, unknown> | string;
}

export interface SnapshotSummary {
  date: Date;
  updateType: UpdateType;
  available: Array<{ device: Device; location: Location }>;
}

/** Raised when a unique name or URL is taken. */
export class DuplicateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateError';
  }
}

/**
 * Persistence of users, tokens, projects and snapshots. One contract so the MongoDB store and
 * an embedded store pass the same suite.
 */
export interface Store {
  init(): Promise<void>;
  close(): Promise<void>;
  ping(): Promise<void>;

  createUser(name: string): Promise<UserRecord>;
  findUserByName(name: string): Promise<UserRecord | null>;
  listUsers(): Promise<UserRecord[]>;

  addToken(token: Omit<TokenRecord, 'createdAt' | 'revokedAt'>): Promise<void>;
  findToken(prefix: string): Promise<TokenRecord | null>;
  revokeToken(prefix: string): Promise<boolean>;

  addProject(project: NewProject): Promise<ProjectRecord>;
  findProject(userId: string, url: string): Promise<ProjectRecord | null>;
  listProjects(userId?: string): Promise<ProjectRecord[]>;
  /** Removes a project with its snapshots, results and KPI records. */
  removeProject(userId: string, url: string): Promise<boolean>;

  /** Persists a snapshot and returns the date it was stored under. */
  saveSnapshot(snapshot: NewSnapshot): Promise<Date>;
  findSnapshot(projectId: string, date: Date, filter?: SnapshotFilter): Promise<SnapshotRecord | null>;
  /** A project's complete snapshots, oldest first. */
  listSnapshots(projectId: string): Promise<SnapshotSummary[]>;
  /**
   * A user's KPI records in a date range, ordered by date, url, device, location, section, kpi;
   * read from a cursor, so memory stays flat however many there are.
   */
  streamKpis(filter: OverviewFilter): AsyncIterable<KpiRow>;
}

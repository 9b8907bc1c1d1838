import type {
  Budgets,
  CellCheck,
  CruxRecord,
  Device,
  KpiRecord,
  LighthouseResult,
  Location,
  MissingCell,
  RunSummary,
  UpdateProgress,
  UpdateType,
} from '@perfwatch/common';
import type { ResultBytes } from '../snapshots/result-bytes.ts';
import type { UnreadableRecords } from './unreadable-records.ts';

/** What the KPI records of a project's field-data history hang on instead of a snapshot. */
export const fieldHistoryId = (projectId: string): string => `history:${projectId}`;

/** Runs finished of those planned, per device and location: the API's shape, kept as it is. */
export type { MissingCell, UpdateProgress } from '@perfwatch/common';

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
  /** When it stops being accepted; null: never (and tokens issued before expiry existed). */
  expiresAt: Date | null;
}

/** A token as issued: the store adds when, and that it is not revoked. */
export type NewToken = Omit<TokenRecord, 'createdAt' | 'revokedAt' | 'expiresAt'> & { expiresAt?: Date | null };

export interface ProjectRecord {
  id: string;
  userId: string;
  url: string;
  domain: string;
  locations: Location[];
  defaultLocation: Location;
  runs: number;
  schedule: string | null;
  /** Budgets and allowed regressions every stored snapshot is checked against (none: empty). */
  budgets: Budgets;
  /** Cookies, headers and login steps for a page behind a login, sealed (secret-box.ts); null: none. */
  auth: string | null;
  createdAt: Date;
}

export type NewProject = Omit<ProjectRecord, 'id' | 'createdAt' | 'budgets' | 'auth'> & {
  budgets?: Budgets;
  auth?: string | null;
};

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
  /** The project's budget checks on this cell, with their alert states; absent without budgets. */
  checks?: CellCheck[];
}

/**
 * A cell of a snapshot being written: the representative run's result as the gzip of its JSON
 * (received so from agents of v1.5, and stored so), and what was read of it without inflating.
 */
export interface NewLocationSnapshot extends Omit<LocationSnapshot, 'lighthouse'> {
  lighthouse: ResultBytes;
  lighthouseVersion: string;
  /** The representative run's numbers (its digest's skeleton of the result): what budgets check. */
  measured: LighthouseResult;
}

export interface NewSnapshot {
  project: ProjectRecord;
  updateId: string;
  /** Wanted date, whole second; the store moves it on by a second if the project already has one then. */
  date: Date;
  updateType: UpdateType;
  results: NewLocationSnapshot[];
  /** The project's cells without a result, and why; none when absent. */
  missing?: MissingCell[];
  /** LIGHTHOUSE_KPI_VERSION of its KPI records; absent: 1, the seed's. */
  kpiVersion?: number;
}

/** Whether a snapshot's cells announce budget events: its save then marks it unannounced until they are in the outbox. */
export const announcesEvents = (results: ReadonlyArray<Pick<LocationSnapshot, 'checks'>>): boolean =>
  results.some((r) => r.checks?.some((c) => c.event !== undefined) ?? false);

/** A complete snapshot whose budget events are not yet in the outbox (see listUnannouncedSnapshots). */
export interface UnannouncedSnapshot {
  projectId: string;
  userId: string;
  url: string;
  updateId: string;
  date: Date;
  /** When it was stored: only webhooks that existed then are sent its events. */
  storedAt: Date;
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
  /** With each result's JSON as stored (UTF-8), which `lighthouse` was read from: answers splice it. */
  results: Array<LocationSnapshot & { lighthouseJson: Buffer }>;
  /** Cells of the update without a result, and why; whatever a read filters. */
  missing: MissingCell[];
}

/** A stored cell whose result stays in the database until it is read. */
export interface StoredCell extends Omit<LocationSnapshot, 'lighthouse' | 'kpis'> {
  /**
   * The result's JSON as stored (UTF-8, one JSON object: result-bytes.ts storedResultJson),
   * fetched and inflated at each call, and kept by nothing here.
   */
  resultJson(): Promise<Buffer>;
}

export interface SnapshotCells extends Omit<SnapshotRecord, 'results'> {
  results: StoredCell[];
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

/** Records per batch of `streamKpis`: large enough that awaits cost nothing, small enough to be a few hundred kB. */
export const KPI_BATCH = 500;

/**
 * `source`'s rows, each read by `read`, in batches of KPI_BATCH (both stores' streamKpis); a
 * batch also goes out early when `now()` says so (what a cursor holds is used up). A source
 * read synchronously (the embedded store's statement) is read without an await per row.
 */
export async function* kpiBatches<S>(
  source: Iterable<S> | AsyncIterable<S>,
  read: (row: S) => KpiRow,
  now: () => boolean = () => false,
): AsyncGenerator<readonly KpiRow[]> {
  let batch: KpiRow[] = [];
  const full = (row: S) => {
    batch.push(read(row));
    return batch.length >= KPI_BATCH || now();
  };
  const take = () => {
    const taken = batch;
    batch = [];
    return taken;
  };
  if (Symbol.iterator in source) {
    for (const row of source) if (full(row)) yield take();
  } else {
    for await (const row of source) if (full(row)) yield take();
  }
  if (batch.length > 0) yield batch;
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
  /**
   * The record's data as the JSON text it is served as (an object for LIGHTHOUSE and the other
   * object-valued sections, a string for CRUX): the overview splices it into its answer
   * instead of parsing and re-serialising a million of them.
   */
  dataJson: string;
}

export interface SnapshotPage {
  before?: Date;
  limit: number;
}

export interface SnapshotSummary {
  date: Date;
  updateType: UpdateType;
  available: Array<{ device: Device; location: Location }>;
}

export const WEBHOOK_FORMATS = ['json', 'slack'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

export interface WebhookRecord {
  id: string;
  userId: string;
  targetUrl: string;
  /** Only this project's events; null: every project of the user. */
  projectUrl: string | null;
  format: WebhookFormat;
  /**
   * The HMAC key, which signing needs (it cannot be a digest as API tokens are): sealed under
   * PERFWATCH_SECRETS_KEY (`pwsec1.…`, webhook-secrets.ts), or as it is (`pwhs_…`) when stored
   * without a key or before secrets were sealed. Both forms are read.
   */
  secret: string;
  createdAt: Date;
}

export type NewWebhook = Omit<WebhookRecord, 'id' | 'createdAt'>;

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event for one webhook, in the outbox until delivered or given up on. */
export interface DeliveryRecord {
  /** Derived from the webhook and the event's origin, so announcing it twice stores it once. */
  id: string;
  webhookId: string;
  userId: string;
  event: string;
  /** The exact body posted (and signed), fixed when the event happened. */
  body: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

export type NewDelivery = Pick<DeliveryRecord, 'id' | 'webhookId' | 'userId' | 'event' | 'body' | 'createdAt'>;

/** What one attempt at a delivery came to; `attempts` grows by one. */
export type DeliveryAttempt =
  | { status: 'delivered'; at: Date }
  | { status: 'pending'; error: string; nextAttemptAt: Date }
  | { status: 'failed'; error: string };

export interface AnnotationRecord {
  id: string;
  projectId: string;
  date: Date;
  text: string;
  link: string | null;
  createdAt: Date;
}

export type NewAnnotation = Omit<AnnotationRecord, 'id' | 'createdAt'>;

/** Raised when a unique name or URL is taken. */
export const UPDATE_STATUSES = ['queued', 'running', 'done', 'failed'] as const;
export type UpdateStatus = (typeof UPDATE_STATUSES)[number];

export interface NewUpdate {
  id: string;
  userId: string;
  projectId: string;
  url: string;
  devices: readonly Device[];
  locations: readonly Location[];
  updateType: UpdateType;
  /** Runs per (device, location): with the cells, what the update weighs in its user's limits. */
  runs: number;
}

/** A state change of an update; `reason` may also note why a `queued` update waits again. */
export type UpdateState =
  | { status: 'queued'; reason?: string }
  | { status: 'running'; reason?: string }
  | { status: 'done'; date: Date; reason?: string; missing?: MissingCell[] }
  | { status: 'failed'; reason: string };

export interface UpdateRecord {
  id: string;
  userId: string;
  projectId: string;
  url: string;
  devices: Device[];
  locations: Location[];
  updateType: UpdateType;
  status: UpdateStatus;
  /** The snapshot date, once done. */
  date: Date | null;
  reason: string | null;
  /** Deliveries that started running it. */
  attempts: number;
  /** Runs per (device, location). */
  runs: number;
  /**
   * Null while it waits in its user's backlog (see update-admission.ts); then when it was given
   * to the queue, which its deadline counts from.
   */
  admittedAt: Date | null;
  progress: UpdateProgress[];
  /** Once done: the cells it could not measure, and why. */
  missing: MissingCell[];
  createdAt: Date;
  updatedAt: Date;
}

/** A snapshot's KPI records of `sections`, computed again per cell, as of KPI `version`. */
export interface KpiReplacement {
  sections: readonly string[];
  results: ReadonlyArray<{ device: Device; location: Location; kpis: readonly KpiRecord[] }>;
  version: number;
}

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

/** Another delivery of the same update is writing its snapshot now; this one should retry later. */
export class ConcurrentWrite extends Error {
  constructor(updateId: string) {
    super(`update ${updateId} is being written by another delivery`);
    this.name = 'ConcurrentWrite';
  }
}

export class DuplicateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateError';
  }
}

/** Raised when a user already has as many webhooks as one may have. */
export class WebhookLimitReached extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`you have ${limit} webhooks, as many as one user may have; remove one first`);
    this.name = 'WebhookLimitReached';
    this.limit = limit;
  }
}

/**
 * Persistence of users, tokens, projects and snapshots. One contract so the MongoDB store and
 * an embedded store pass the same suite.
 */
export interface Store {
  /** Records the list reads skipped because they could not be parsed (see unreadable-records.ts). */
  readonly unreadable: UnreadableRecords;
  init(): Promise<void>;
  close(): Promise<void>;
  ping(): Promise<void>;

  createUser(name: string): Promise<UserRecord>;
  findUserByName(name: string): Promise<UserRecord | null>;
  listUsers(): Promise<UserRecord[]>;

  addToken(token: NewToken): Promise<void>;
  findToken(prefix: string): Promise<TokenRecord | null>;
  /** A user's tokens, revoked ones included, oldest first. */
  listTokens(userId: string): Promise<TokenRecord[]>;
  revokeToken(prefix: string): Promise<boolean>;

  addProject(project: NewProject): Promise<ProjectRecord>;
  findProject(userId: string, url: string): Promise<ProjectRecord | null>;
  listProjects(userId?: string): Promise<ProjectRecord[]>;
  /** Removes a project with its snapshots, results, KPI records and annotations. */
  removeProject(userId: string, url: string): Promise<boolean>;
  /** Replaces a project's budgets. */
  setProjectBudgets(projectId: string, budgets: Budgets): Promise<void>;
  /** Replaces a project's sealed credentials (null: none). */
  setProjectAuth(projectId: string, sealed: string | null): Promise<void>;
  /**
   * Replaces a project's sealed credentials only while they are still `expected` (what the caller
   * read); false when another write came first, which then stands.
   */
  replaceProjectAuth(projectId: string, expected: string, sealed: string): Promise<boolean>;

  /**
   * Adds a webhook; WebhookLimitReached when its user would have more than `maxPerUser`. Never
   * more, however many adds race (one of them may be refused although the other is then removed).
   */
  addWebhook(webhook: NewWebhook, maxPerUser?: number): Promise<WebhookRecord>;
  /** One webhook by its id, or null: what a delivery attempt reads (not the user's whole list). */
  findWebhook(id: string): Promise<WebhookRecord | null>;
  /** Replaces the stored form of a webhook's secret (sealed again under a new key). */
  setWebhookSecret(id: string, secret: string): Promise<void>;
  /** A user's webhooks, oldest first. */
  listWebhooks(userId: string): Promise<WebhookRecord[]>;
  /** Removes a webhook of the user with its deliveries; false when the user has none with that id. */
  removeWebhook(userId: string, id: string): Promise<boolean>;
  /** Puts deliveries in the outbox, due now; one already there (same id) is left as it is. */
  enqueueDeliveries(deliveries: readonly NewDelivery[]): Promise<void>;
  /**
   * Takes up to `limit` pending deliveries due by `now`, earliest due first, each held (not due)
   * until now + leaseMs so another sender, on this gateway or another, does not post it
   * meanwhile; none of the users in `exceptUsers` (those with enough in flight already).
   */
  claimDeliveries(
    now: Date,
    limit: number,
    leaseMs: number,
    exceptUsers?: readonly string[],
  ): Promise<DeliveryRecord[]>;
  recordDeliveryAttempt(id: string, attempt: DeliveryAttempt): Promise<void>;
  /** A webhook's newest deliveries, newest first. */
  listDeliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]>;
  /** Deletes delivered and failed deliveries created before `before` (pending ones stay); how many. */
  deleteDeliveriesBefore(before: Date): Promise<number>;

  addAnnotation(annotation: NewAnnotation): Promise<AnnotationRecord>;
  /** A project's annotations in [from, to), by date: with `limit`, the newest `limit` of them. */
  listAnnotations(projectId: string, range?: { from?: Date; to?: Date; limit?: number }): Promise<AnnotationRecord[]>;
  countAnnotations(projectId: string): Promise<number>;
  /** Removes one annotation of the project; false when it has none of that id. */
  removeAnnotation(projectId: string, id: string): Promise<boolean>;
  /** Retention: annotations dated before `before`, of every project. */
  deleteAnnotationsBefore(before: Date): Promise<number>;
  /** Retention: finished (done or failed) update records last changed before `before`. */
  deleteFinishedUpdatesBefore(before: Date): Promise<number>;

  /**
   * Persists a snapshot and returns the date it was stored under. Idempotent per updateId: a
   * second call returns the first snapshot's date (or replaces a write that was cut short).
   */
  saveSnapshot(snapshot: NewSnapshot): Promise<Date>;
  /**
   * Snapshots stored before `storedBefore` whose budget events (announcesEvents) are not yet
   * recorded in the outbox, oldest first, at most `limit`. Marked so by their save, in the same
   * write that completes them, so a writer that dies before its outbox write leaves them here.
   */
  listUnannouncedSnapshots(storedBefore: Date, limit: number): Promise<UnannouncedSnapshot[]>;
  /** Records that the update's snapshot has its budget events in the outbox. */
  markSnapshotAnnounced(updateId: string): Promise<void>;

  createUpdate(update: NewUpdate): Promise<void>;
  /**
   * Records a state change. `done` is final whatever else is recorded; `failed` gives way only
   * to `done`: a delivery still running when another failed the update for good (and JetStream
   * dropped its message) must not make it `queued` again, where nothing would ever pick it up.
   */
  setUpdateState(id: string, state: UpdateState): Promise<void>;
  /** Records how far the running delivery of an update is (not once it is done). */
  setUpdateProgress(id: string, progress: readonly UpdateProgress[]): Promise<void>;
  /** An update of one of the user's projects, or null (another user's update is not found). */
  findUpdate(userId: string, id: string): Promise<UpdateRecord | null>;
  /**
   * Updates in the queue or running (not waiting in a user's backlog, which the per-user limits
   * bound) that include `location`: the back-pressure measure.
   */
  countPendingUpdates(location: Location): Promise<number>;
  /** Every update queued or running, oldest first: what an in-process queue takes up again after a restart. */
  listUnfinishedUpdates(): Promise<UpdateRecord[]>;
  /** A user's unfinished updates and the runs they hold: what the per-user limits count. */
  userBacklog(userId: string): Promise<{ updates: number; runs: number }>;
  /**
   * Gives the user's oldest updates waiting in their backlog to the queue while fewer than
   * `limit` of the user's updates are queued or running; returns the ones it admitted.
   */
  admitUpdates(userId: string, limit: number): Promise<UpdateRecord[]>;
  /**
   * Takes one of the user's `limit` slots of a kind (sync updates in flight) until now + ttlMs,
   * for every gateway replica at once; null when they are all taken.
   */
  claimSlot(kind: string, userId: string, limit: number, ttlMs: number): Promise<string | null>;
  releaseSlot(id: string): Promise<void>;
  /** A small named value the programs keep beside the data (the prefix of `perfwatch start`'s last token). */
  readNote(key: string): Promise<string | null>;
  writeNote(key: string, value: string): Promise<void>;

  /**
   * Takes or renews the named lease for `holder` until now + ttlMs; false while another holder's
   * lease runs. One scheduler among the gateway replicas.
   */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** The latest schedule tick handled for each project with a schedule. */
  listScheduledProjects(): Promise<Array<ProjectRecord & { scheduledThrough: Date | null }>>;
  /** Records that `tick` was handled, unless another scheduler recorded a later one. */
  markScheduled(projectId: string, tick: Date): Promise<void>;
  /** Complete snapshots whose KPI records are of a version below `version` (none stored: 1), oldest first. */
  listSnapshotsBelowKpiVersion(version: number, limit: number): Promise<Array<{ projectId: string; date: Date }>>;
  /**
   * Replaces a snapshot's KPI records of `sections` with those given per result, and records
   * them as of `version`. Safe to repeat: a replacement cut short is done again whole.
   */
  replaceSnapshotKpis(snapshot: { projectId: string; date: Date }, replacement: KpiReplacement): Promise<void>;
  /**
   * Replaces a project's field-data history (the CrUX History API's weeks before it was added):
   * KPI records of no snapshot, dated at each period's end, under the project's default location.
   */
  saveFieldHistory(
    project: ProjectRecord,
    rows: ReadonlyArray<{ date: Date; device: Device; kpis: readonly KpiRecord[] }>,
  ): Promise<void>;
  /** Deletes snapshots older than `before` with their results and KPI records; returns how many. */
  deleteSnapshotsBefore(before: Date, limit: number): Promise<number>;
  findSnapshot(projectId: string, date: Date, filter?: SnapshotFilter): Promise<SnapshotRecord | null>;
  /**
   * A snapshot with its cells but not their results: each cell reads its result from the
   * database when asked (`resultJson`), so a reader of many cells (/v1/audit, /v1/compare) holds
   * one result at a time, not all of them.
   */
  findSnapshotCells(projectId: string, date: Date, filter?: SnapshotFilter): Promise<SnapshotCells | null>;
  /**
   * Deletes results and KPI records of snapshots that are not complete, written before
   * `olderThan` (no live writer owns them then); returns how many.
   */
  deleteOrphans(olderThan: Date): Promise<number>;
  /** The complete snapshot an update wrote, if it wrote one: a later delivery then only records it. */
  findSnapshotOfUpdate(updateId: string): Promise<{ date: Date; missing: MissingCell[] } | null>;
  /**
   * A project's complete snapshots, oldest first; with a page, only the newest `limit` of those
   * before `before` (still oldest first).
   */
  listSnapshots(projectId: string, page?: SnapshotPage): Promise<SnapshotSummary[]>;
  /**
   * A user's KPI records in a date range, ordered by date, url, device, location, section, kpi,
   * in batches of at most KPI_BATCH: read from a cursor, so memory stays flat however many
   * there are, and a reader pays one await per batch rather than per record.
   */
  streamKpis(filter: OverviewFilter): AsyncIterable<readonly KpiRow[]>;
}

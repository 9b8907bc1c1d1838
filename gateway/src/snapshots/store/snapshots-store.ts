import { z } from 'zod';
import {
  cellArtifactsSchema,
  cellCheckSchema,
  cellStepSchema,
  cruxPairSchema,
  DEVICES,
  LOCATIONS,
  UPDATE_TYPES,
  missingCellSchema,
  runSummarySchema,
  type CellArtifacts,
  type CellStep,
  type CellCheck,
  type CruxRecord,
  type Device,
  type KpiRecord,
  type LighthouseResult,
  type Location,
  type MissingCell,
  type Revision,
  type RunSummary,
  type UpdateType,
} from '@perfwatch/common';
import type { StoredForms } from '../../store/record-forms.ts';
import { storedRevision } from '../../store/stored-revision.ts';
import type { ProjectRecord } from '../../projects/store/projects-store.ts';
import { storedResultJson, withStoredResult, type ResultBytes } from '../result-bytes.ts';
import type { NewCellStep } from '../../updates/flow-steps.ts';

interface CruxPair {
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
  /** The representative run's artifacts (gateway/src/artifacts/), kept or missing; absent before artifacts existed. */
  artifacts?: CellArtifacts;
  /** A flow's cell (issue 36): its steps in the flow's order, each with its median run; absent for a navigation. */
  steps?: CellStep[];
}

/**
 * A cell of a snapshot being written: the representative run's result as the gzip of its JSON
 * (received so from agents of v1.5, and stored so), and what was read of it without inflating.
 */
export interface NewLocationSnapshot extends Omit<LocationSnapshot, 'lighthouse' | 'steps'> {
  lighthouse: ResultBytes;
  /** A flow's steps, each with its median run's result as received (the first step's is `lighthouse`). */
  steps?: NewCellStep[];
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
  /** The code change measured, kept with the snapshot and its KPI records; absent when none was given. */
  revision?: Revision;
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
  /** The code change measured; undefined when its update was given none. */
  revision?: Revision;
}

/** A stored cell whose result stays in the database until it is read. */
export interface StoredCell extends Omit<LocationSnapshot, 'lighthouse' | 'kpis'> {
  /**
   * The result's JSON as stored (UTF-8, one JSON object: result-bytes.ts storedResultJson),
   * fetched and inflated at each call, and kept by nothing here.
   */
  resultJson(): Promise<Buffer>;
  /**
   * A flow step's result JSON as stored (as `resultJson`), by its 0-based place in `steps`; the
   * first step's is the cell's own result.
   */
  stepJson(index: number): Promise<Buffer>;
}

export interface SnapshotCells extends Omit<SnapshotRecord, 'results'> {
  results: StoredCell[];
}

export interface SnapshotFilter {
  device?: Device;
  locations?: Location[];
}

export interface SnapshotPage {
  before?: Date;
  limit: number;
}

export interface SnapshotSummary {
  date: Date;
  updateType: UpdateType;
  available: Array<{ device: Device; location: Location }>;
  revision?: Revision;
}

/** Another delivery of the same update is writing its snapshot now; this one should retry later. */
export class ConcurrentWrite extends Error {
  constructor(updateId: string) {
    super(`update ${updateId} is being written by another delivery`);
    this.name = 'ConcurrentWrite';
  }
}

/** Snapshots as the updates write them: once per update, announced, aged out. */
export interface SnapshotsStore {
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
  /** Deletes snapshots older than `before` with their results and KPI records; returns how many. */
  deleteSnapshotsBefore(before: Date, limit: number): Promise<number>;
  /**
   * Deletes results and KPI records of snapshots that are not complete, written before
   * `olderThan` (no live writer owns them then); returns how many.
   */
  deleteOrphans(olderThan: Date): Promise<number>;
  /** The complete snapshot an update wrote, if it wrote one: a later delivery then only records it. */
  findSnapshotOfUpdate(updateId: string): Promise<{ date: Date; missing: MissingCell[] } | null>;
}

/** What the API reads of complete snapshots: one whole, one cell by cell, a project's list. */
export interface SnapshotReadsStore {
  findSnapshot(projectId: string, date: Date, filter?: SnapshotFilter): Promise<SnapshotRecord | null>;
  /**
   * A snapshot with its cells but not their results: each cell reads its result from the
   * database when asked (`resultJson`), so a reader of many cells (/v1/audit, /v1/compare) holds
   * one result at a time, not all of them.
   */
  findSnapshotCells(projectId: string, date: Date, filter?: SnapshotFilter): Promise<SnapshotCells | null>;
  /**
   * A project's complete snapshots, oldest first; with a page, only the newest `limit` of those
   * before `before` (still oldest first).
   */
  listSnapshots(projectId: string, page?: SnapshotPage): Promise<SnapshotSummary[]>;
}

/** The cells of a snapshot a read asks for. */
export const filtered =
  ({ device, locations }: SnapshotFilter) =>
  (r: { device: Device; location: Location }): boolean =>
    (!device || r.device === device) && (!locations?.length || locations.includes(r.location));

/** The (device, location) of each cell: what a snapshot has a result for. */
export const availableCells = (results: ReadonlyArray<{ device: Device; location: Location }>) =>
  results.map(({ device, location }) => ({ device, location }));

/** A snapshot, and each of its cells without its Lighthouse result's bytes (each backend reads those its own way). */
export function snapshotRecords(forms: StoredForms) {
  const { id, time, structured } = forms;
  const snapshot = z.object({
    id,
    projectId: id,
    updateId: z.string(),
    url: z.string(),
    date: time,
    updateType: z.enum(UPDATE_TYPES),
    available: structured(z.array(z.object({ device: z.enum(DEVICES), location: z.enum(LOCATIONS) }))),
    missing: structured(z.array(missingCellSchema)).default([]),
    revision: storedRevision(forms),
  });
  const result = z.object({
    device: z.enum(DEVICES),
    location: z.enum(LOCATIONS),
    median: z.number().int().positive(),
    runs: structured(z.array(runSummarySchema)),
    elementCount: z.number().int().nullable(),
    crux: structured(cruxPairSchema),
    checks: structured(z.array(cellCheckSchema)).nullish(),
    // Read back tolerantly: a record that does not parse says nothing kept, never fails the read.
    artifacts: structured(cellArtifactsSchema).nullish().catch(null),
    // Absent on cells of navigations, and on every cell stored before flows (issue 36).
    steps: structured(z.array(cellStepSchema)).nullish(),
  });
  return { snapshot, result };
}

type ResultRecord = z.output<ReturnType<typeof snapshotRecords>['result']>;

/**
 * A stored cell whose result stays in the database: `fetchGzip` reads its bytes when the cell's
 * result is asked for, `fetchStepGzips` a flow's further steps' (in order, the first step's
 * being the cell's), and nothing keeps them (findSnapshotCells).
 */
export function cellReadLater(
  record: ResultRecord,
  fetchGzip: () => Promise<Uint8Array>,
  fetchStepGzips: () => Promise<readonly Uint8Array[]> = async () => [],
): StoredCell {
  return {
    ...cellOf(record),
    resultJson: async () => storedResultJson(await fetchGzip()),
    stepJson: async (index) => {
      if (index === 0) return storedResultJson(await fetchGzip());
      const bytes = (await fetchStepGzips())[index - 1];
      if (!bytes) throw new Error(`the cell has no step ${index + 1}`);
      return storedResultJson(bytes);
    },
  };
}

/** A flow step as a cell's record keeps it: its summary, without its result or KPI records (kept apart). */
export const storedStep = ({ name, kind, median, runs }: CellStep): CellStep => ({ name, kind, median, runs });

/**
 * A flow's further steps' results as one backend keeps them in a row: their gzips one after
 * the other, and their lengths (`12,34`), so a cell's steps are written and removed with it.
 */
export function joinedStepGzips(gzips: readonly Uint8Array[]): { bytes: Buffer; parts: string } {
  return { bytes: Buffer.concat(gzips), parts: gzips.map((g) => g.byteLength).join(',') };
}

/** The gzips `joinedStepGzips` joined, split again; bytes that do not add up are refused. */
export function splitStepGzips(bytes: Uint8Array, parts: string): Uint8Array[] {
  const lengths = parts === '' ? [] : parts.split(',').map(Number);
  if (lengths.some((n) => !Number.isInteger(n) || n < 0) || lengths.reduce((a, b) => a + b, 0) !== bytes.byteLength)
    throw new Error("the cell's step results do not add up");
  let at = 0;
  return lengths.map((n) => bytes.subarray(at, (at += n)));
}

/** A stored cell as a store hands it out: its Lighthouse result read from `bytes` only when asked for. */
export function storedCell(record: ResultRecord, bytes: Uint8Array): SnapshotRecord['results'][number] {
  return withStoredResult({ ...cellOf(record), kpis: [] }, bytes);
}

/** A result record's cell, its optional parts present only when stored. */
function cellOf({ checks, artifacts, steps, ...cell }: ResultRecord) {
  return { ...cell, ...(checks ? { checks } : {}), ...(artifacts ? { artifacts } : {}), ...(steps ? { steps } : {}) };
}

import { z } from 'zod';
import {
  DEVICES,
  LOCATIONS,
  UPDATE_TYPES,
  type Device,
  type KpiRecord,
  type Location,
  type Revision,
  type UpdateType,
} from '@perfwatch/common';
import type { StoredForms } from '../../store/record-forms.ts';
import { storedRevision } from '../../store/stored-revision.ts';
import type { ProjectRecord } from '../../projects/store/projects-store.ts';

/** What the KPI records of a project's field-data history hang on instead of a snapshot. */
export const fieldHistoryId = (projectId: string): string => `history:${projectId}`;

export interface OverviewFilter {
  userId: string;
  from: Date;
  /** Exclusive. */
  to: Date;
  domain?: string;
  updateType?: UpdateType;
  /** Upper-case section names. */
  sections?: string[];
  /** Records of snapshots whose commit starts with this one (commitRange). */
  commit?: string;
  branch?: string;
  pullRequest?: number;
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
  /** The flow step the record is of; undefined for a project without a flow. */
  step?: string;
  /** The code change its snapshot measured; undefined when there was none. */
  revision?: Revision;
  /**
   * The record's data as the JSON text it is served as (an object for LIGHTHOUSE and the other
   * object-valued sections, a string for CRUX): the overview splices it into its answer
   * instead of parsing and re-serialising a million of them.
   */
  dataJson: string;
}

/**
 * For a reader that wants a page's own KPI records, not a flow's further steps': true for the
 * first record of a KPI of a cell at a date (a flow's records of one KPI come in the flow's
 * order, the page's first), false for the ones after it. A new predicate per read.
 */
export function pageRecordsOnly(): (row: KpiRow) => boolean {
  const seen = new Set<string>();
  return (row) => {
    const key = `${row.url} ${row.device} ${row.location} ${row.date.getTime()} ${row.section} ${row.kpi}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
}

/** A snapshot's KPI records of `sections`, computed again per cell, as of KPI `version`. */
export interface KpiReplacement {
  sections: readonly string[];
  /** Per cell; a flow's cell with its steps' records (placedKpis). */
  results: readonly KpiCell[];
  version: number;
}

/** The KPI records the overview reads, their versions, and a project's field-data history. */
export interface KpisStore {
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
  /**
   * A user's KPI records in a date range, ordered by date, url, device, location, section, kpi,
   * in batches of at most KPI_BATCH: read from a cursor, so memory stays flat however many
   * there are, and a reader pays one await per batch rather than per record.
   */
  streamKpis(filter: OverviewFilter): AsyncIterable<readonly KpiRow[]>;
}

/** Where a snapshot's KPI records belong, denormalised for the overview: its id, project, user, date. */
export interface KpiPlace {
  snapshotId: string;
  projectId: string;
  userId: string;
  date: Date;
  domain: string;
  url: string;
  updateType: UpdateType;
  /** Absent when the snapshot has none: the overview filters on it without reading snapshots. */
  revision?: Revision;
}

/** One KPI record at its place and cell: what each backend writes as a document or a row. */
export interface PlacedKpi extends KpiPlace, KpiRecord {
  device: Device;
  location: Location;
  /** The flow step it is of (absent for a project without a flow). */
  step?: string;
  /**
   * The step's place in its flow: the order of a flow's records of one KPI. MongoDB sorts by it;
   * SQLite's index returns equal keys in the order they were written, which is the flow's.
   */
  stepIndex?: number;
}

/** A cell's KPI records as placed: its own, and a flow's further steps' (the first step's are the cell's own). */
export type KpiCell = {
  device: Device;
  location: Location;
  kpis: readonly KpiRecord[];
  steps?: ReadonlyArray<{ name: string; kpis?: readonly KpiRecord[] }>;
};

/**
 * The KPI records of `cells` at `place`, in the cells' order, a flow's steps in the flow's
 * order: the one place both backends build them.
 */
export const placedKpis = (place: KpiPlace, cells: readonly KpiCell[]): PlacedKpi[] =>
  cells.flatMap(({ device, location, kpis, steps }) => {
    const placed = (records: readonly KpiRecord[], step?: { name: string; index: number }) =>
      records.map((k) => ({
        ...place,
        device,
        location,
        section: k.section,
        kpi: k.kpi,
        data: k.data,
        ...(step ? { step: step.name, stepIndex: step.index } : {}),
      }));
    if (!steps?.length) return placed(kpis);
    return [
      ...placed(kpis, { name: steps[0]!.name, index: 0 }),
      ...steps.slice(1).flatMap((step, i) => placed(step.kpis ?? [], { name: step.name, index: i + 1 })),
    ];
  });

/** A project's field-data history as KPI records: of no snapshot, at its default location, 'scheduled'. */
export const fieldHistoryKpis = (
  project: ProjectRecord,
  rows: ReadonlyArray<{ date: Date; device: Device; kpis: readonly KpiRecord[] }>,
): PlacedKpi[] =>
  rows.flatMap((row) =>
    placedKpis(
      {
        snapshotId: fieldHistoryId(project.id),
        projectId: project.id,
        userId: project.userId,
        date: row.date,
        domain: project.domain,
        url: project.url,
        updateType: 'scheduled',
      },
      [{ device: row.device, location: project.defaultLocation, kpis: row.kpis }],
    ),
  );

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

/** A KPI record's place and name as each backend reads it back; each adds its data as it keeps it. */
export function kpiRecords(forms: StoredForms) {
  const { time } = forms;
  const kpi = z.object({
    date: time,
    domain: z.string(),
    url: z.string(),
    device: z.enum(DEVICES),
    location: z.enum(LOCATIONS),
    updateType: z.enum(UPDATE_TYPES),
    section: z.string(),
    kpi: z.string(),
    // Absent (or null) for projects without a flow, and for every record before flows (issue 36).
    step: z
      .string()
      .nullish()
      .transform((step) => step ?? undefined),
    revision: storedRevision(forms),
  });
  return { kpi };
}

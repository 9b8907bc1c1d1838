import type { SQLInputValue } from 'node:sqlite';
import { z } from 'zod';
import type { Device, KpiRecord } from '@perfwatch/common';
import { asRecord, placeholders, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import type { ProjectRecord } from '../../projects/store/projects-store.ts';
import { addColumns, type SqliteSchema } from '../../store/sqlite-migrations.ts';
import { commitRange, revisionMember } from '../../store/stored-revision.ts';
import {
  fieldHistoryId,
  fieldHistoryKpis,
  kpiBatches,
  kpiRecords,
  placedKpis,
  type KpiReplacement,
  type KpiRow,
  type KpisStore,
  type OverviewFilter,
  type PlacedKpi,
} from './kpis-store.ts';
import { snapshotRecords } from './snapshots-store.ts';

/** The `kpis` table: each record denormalised with its place, for the overview's one index. */
export const kpisSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS kpis (
  snapshot_id TEXT NOT NULL, project_id TEXT NOT NULL, user_id TEXT NOT NULL, date INTEGER NOT NULL, domain TEXT NOT NULL,
  url TEXT NOT NULL, device TEXT NOT NULL, location TEXT NOT NULL, update_type TEXT NOT NULL, section TEXT NOT NULL,
  kpi TEXT NOT NULL, data TEXT NOT NULL, revision TEXT, step TEXT);
CREATE INDEX IF NOT EXISTS kpis_for_overview ON kpis (user_id, date, url, device, location, section, kpi);
CREATE INDEX IF NOT EXISTS kpis_by_snapshot ON kpis (snapshot_id);`,
  steps: [
    {
      version: 9,
      adds: "the code change of each record's snapshot (JSON), for the overview's filters",
      up: addColumns('kpis', 'revision TEXT'),
    },
    { version: 21, adds: 'the flow step of each record (issue 36)', up: addColumns('kpis', 'step TEXT') },
  ],
};

const KPI_COLUMNS = [
  'snapshot_id',
  'project_id',
  'user_id',
  'date',
  'domain',
  'url',
  'device',
  'location',
  'update_type',
  'section',
  'kpi',
  'data',
  'revision',
  'step',
] as const;
/**
 * KPI rows per INSERT: a snapshot's records (about 50 per cell) go in a few statements rather
 * than one each, which was most of the embedded store's share of a snapshot's write at 1,000
 * updates (bench/results.md). 64 rows of 14 values stay far within SQLite's 32,766 parameters.
 */
const KPI_ROWS_PER_INSERT = 64;
const kpiInserts = new Map<number, string>();

function insertKpisSql(rows: number): string {
  let sql = kpiInserts.get(rows);
  if (sql === undefined) {
    const row = `(${placeholders(KPI_COLUMNS)})`;
    sql = `INSERT INTO kpis (${KPI_COLUMNS.join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')}`;
    kpiInserts.set(rows, sql);
  }
  return sql;
}

/** One KPI row's values, in KPI_COLUMNS' order. */
const kpiRowValues = (k: PlacedKpi): SQLInputValue[] => [
  k.snapshotId,
  k.projectId,
  k.userId,
  k.date.getTime(),
  k.domain,
  k.url,
  k.device,
  k.location,
  k.updateType,
  k.section,
  k.kpi,
  JSON.stringify(k.data),
  k.revision ? JSON.stringify(k.revision) : null,
  k.step ?? null,
];

/** Writes `kpis` as rows, KPI_ROWS_PER_INSERT to a statement (within the caller's transaction). */
export function insertKpis(db: SqliteDatabase, kpis: readonly PlacedKpi[]): void {
  for (let at = 0; at < kpis.length; at += KPI_ROWS_PER_INSERT) {
    const chunk = kpis.slice(at, at + KPI_ROWS_PER_INSERT);
    db.run(insertKpisSql(chunk.length), ...chunk.flatMap(kpiRowValues));
  }
}

// `data` was written by JSON.stringify of an object or a string; it is checked to be one of
// those by its first character and passed on as text (see KpiRow.dataJson).
const kpiRow = kpiRecords(sqliteForms).kpi.extend({ dataJson: z.string().regex(/^[{"]/) }) satisfies z.ZodType<KpiRow>;
const snapshotRow = asRecord(snapshotRecords(sqliteForms).snapshot);

/** KPI records in SQLite: the `kpis` table, and the version on each `snapshots` row. */
export class SqliteKpis implements KpisStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async listSnapshotsBelowKpiVersion(
    version: number,
    limit: number,
  ): Promise<Array<{ projectId: string; date: Date }>> {
    const sql = 'SELECT project_id, date FROM snapshots WHERE kpi_version < ? ORDER BY date LIMIT ?';
    return (this.#db.all(sql, version, limit) as Array<{ project_id: string; date: number }>).map((r) => ({
      projectId: r.project_id,
      date: new Date(r.date),
    }));
  }

  async replaceSnapshotKpis(
    { projectId, date }: { projectId: string; date: Date },
    { sections, results, version }: KpiReplacement,
  ): Promise<void> {
    this.#db.transaction(() => {
      const sql = 'SELECT * FROM snapshots WHERE project_id = ? AND date = ?';
      const snapshot = this.#db.get(sql, projectId, date.getTime());
      if (!snapshot) return;
      const row = snapshotRow.parse(snapshot);
      const { user_id: userId, domain } = snapshot as { user_id: string; domain: string };
      this.#db.run(
        `DELETE FROM kpis WHERE snapshot_id = ? AND section IN (${placeholders(sections)})`,
        row.id,
        ...sections,
      );
      const { url, updateType } = row;
      const place = {
        snapshotId: row.id,
        projectId,
        userId,
        date: row.date,
        domain,
        url,
        updateType,
        ...revisionMember(row.revision),
      };
      insertKpis(this.#db, placedKpis(place, results));
      this.#db.run('UPDATE snapshots SET kpi_version = ? WHERE id = ?', version, row.id);
    });
  }

  async saveFieldHistory(
    project: ProjectRecord,
    rows: ReadonlyArray<{ date: Date; device: Device; kpis: readonly KpiRecord[] }>,
  ): Promise<void> {
    this.#db.transaction(() => {
      this.#db.run('DELETE FROM kpis WHERE snapshot_id = ?', fieldHistoryId(project.id));
      insertKpis(this.#db, fieldHistoryKpis(project, rows));
    });
  }

  async *streamKpis(filter: OverviewFilter): AsyncIterable<readonly KpiRow[]> {
    const { userId, from, to, domain, updateType, sections, commit, branch, pullRequest } = filter;
    const where = ['user_id = ?', 'date >= ?', 'date < ?'];
    const params: SQLInputValue[] = [userId, from.getTime(), to.getTime()];
    const add = (clause: string, ...values: SQLInputValue[]) => {
      where.push(clause);
      params.push(...values);
    };
    if (domain) add('domain = ?', domain);
    if (updateType) add('update_type = ?', updateType);
    if (sections && sections.length > 0) add(`section IN (${placeholders(sections)})`, ...sections);
    if (commit) {
      const { from: first, to: past } = commitRange(commit);
      add("json_extract(revision, '$.commit') >= ? AND json_extract(revision, '$.commit') < ?", first, past);
    }
    if (branch) add("json_extract(revision, '$.branch') = ?", branch);
    if (pullRequest) add("json_extract(revision, '$.pullRequest') = ?", pullRequest);
    const rows = this.#db.conn
      .prepare(
        `SELECT date, domain, url, device, location, update_type AS updateType, section, kpi, step, revision, data AS dataJson FROM kpis WHERE ${where.join(' AND ')} ORDER BY date, url, device, location, section, kpi`,
      )
      .iterate(...params);
    // Batch by batch from the statement: memory stays flat however many records match.
    yield* kpiBatches(rows, (row) => kpiRow.parse(row));
  }
}

import { z } from 'zod';
import { asRecord, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import {
  cellReadLater,
  filtered,
  snapshotRecords,
  splitStepGzips,
  storedCell,
  type SnapshotCells,
  type SnapshotFilter,
  type SnapshotPage,
  type SnapshotReadsStore,
  type SnapshotRecord,
  type SnapshotSummary,
} from './snapshots-store.ts';

const records = snapshotRecords(sqliteForms);
const snapshotRow = asRecord(records.snapshot);
const summaryRow = asRecord(records.snapshot.pick({ date: true, updateType: true, available: true, revision: true }));
const resultBytes = z.instanceof(Uint8Array);
const resultRow = asRecord(records.result.extend({ lighthouse: resultBytes }));
/** A result's row without its bytes, and its place among the snapshot's. */
const cellRow = asRecord(records.result.extend({ seq: z.number().int() }));
const RESULT_COLUMNS_BUT_BYTES = 'seq, device, location, median, runs, element_count, crux, checks, artifacts, steps';
const stepResultsRow = z.object({ step_results: resultBytes.nullable(), step_parts: z.string().nullable() });

/** Snapshots read from SQLite: `snapshots`, their cells' results in `results`. */
export class SqliteSnapshotReads implements SnapshotReadsStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async findSnapshot(projectId: string, date: Date, filter: SnapshotFilter = {}): Promise<SnapshotRecord | null> {
    const raw = this.#db.get('SELECT * FROM snapshots WHERE project_id = ? AND date = ?', projectId, date.getTime());
    if (!raw) return null;
    const snapshot = snapshotRow.parse(raw);
    const rows = this.#db
      // Not a flow's further step results: a whole read has no use for them (findSnapshotCells reads them).
      .all(
        `SELECT ${RESULT_COLUMNS_BUT_BYTES}, lighthouse FROM results WHERE snapshot_id = ? ORDER BY seq`,
        snapshot.id,
      )
      .map((row) => resultRow.parse(row));
    const results = rows.filter(filtered(filter)).map(({ lighthouse, ...r }) => storedCell(r, lighthouse));
    return { ...snapshot, results };
  }

  async findSnapshotCells(projectId: string, date: Date, filter: SnapshotFilter = {}): Promise<SnapshotCells | null> {
    const raw = this.#db.get('SELECT * FROM snapshots WHERE project_id = ? AND date = ?', projectId, date.getTime());
    if (!raw) return null;
    const snapshot = snapshotRow.parse(raw);
    const rows = this.#db
      .all(`SELECT ${RESULT_COLUMNS_BUT_BYTES} FROM results WHERE snapshot_id = ? ORDER BY seq`, snapshot.id)
      .map((row) => cellRow.parse(row));
    const results = rows.filter(filtered(filter)).map(({ seq, ...r }) =>
      cellReadLater(
        r,
        async () => {
          const sql = 'SELECT lighthouse FROM results WHERE snapshot_id = ? AND seq = ?';
          const stored = this.#db.get(sql, snapshot.id, seq);
          // Deleted since (retention, a removed project): the reader's answer cannot be whole.
          if (!stored) throw new Error('the result is no longer stored');
          return resultBytes.parse((stored as { lighthouse: unknown }).lighthouse);
        },
        async () => {
          const sql = 'SELECT step_results, step_parts FROM results WHERE snapshot_id = ? AND seq = ?';
          const stored = this.#db.get(sql, snapshot.id, seq);
          if (!stored) throw new Error('the result is no longer stored');
          const { step_results: bytes, step_parts: parts } = stepResultsRow.parse(stored);
          return bytes && parts !== null ? splitStepGzips(bytes, parts) : [];
        },
      ),
    );
    return { ...snapshot, results };
  }

  async listSnapshots(projectId: string, page?: SnapshotPage): Promise<SnapshotSummary[]> {
    const rows = page
      ? this.#db
          .all(
            'SELECT * FROM snapshots WHERE project_id = ? AND date < ? ORDER BY date DESC LIMIT ?',
            projectId,
            page.before?.getTime() ?? Number.MAX_SAFE_INTEGER,
            page.limit,
          )
          .reverse()
      : this.#db.all('SELECT * FROM snapshots WHERE project_id = ? ORDER BY date', projectId);
    return this.#db.unreadable.parseEach('snapshot', summaryRow, rows);
  }
}

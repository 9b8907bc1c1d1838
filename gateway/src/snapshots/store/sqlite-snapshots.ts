import { z } from 'zod';
import type { MissingCell } from '@perfwatch/common';
import { asRecord, ms, newId, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import { NoFreeSnapshotDate, snapshotDates } from '../../store/snapshot-dates.ts';
import { addColumns, type SqliteSchema } from '../../store/sqlite-migrations.ts';
import { revisionMember } from '../../store/stored-revision.ts';
import type { ProjectRecord } from '../../projects/store/projects-store.ts';
import { placedKpis, type KpiPlace } from './kpis-store.ts';
import { insertKpis } from './sqlite-kpis.ts';
import {
  announcesEvents,
  availableCells,
  joinedStepGzips,
  storedStep,
  snapshotRecords,
  type NewSnapshot,
  type SnapshotsStore,
  type UnannouncedSnapshot,
} from './snapshots-store.ts';

/** The `snapshots` table and their cells' `results` (the reads slice reads the same tables). */
export const snapshotsSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS snapshots (
  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, user_id TEXT NOT NULL, update_id TEXT NOT NULL UNIQUE, url TEXT NOT NULL,
  domain TEXT NOT NULL, date INTEGER NOT NULL, update_type TEXT NOT NULL, available TEXT NOT NULL,
  missing TEXT NOT NULL DEFAULT '[]', kpi_version INTEGER NOT NULL DEFAULT 1, alerts_pending_since INTEGER,
  revision TEXT, UNIQUE (project_id, date));
CREATE INDEX IF NOT EXISTS snapshots_by_date ON snapshots (date);
CREATE TABLE IF NOT EXISTS results (
  snapshot_id TEXT NOT NULL, seq INTEGER NOT NULL, device TEXT NOT NULL, location TEXT NOT NULL, median INTEGER NOT NULL,
  runs TEXT NOT NULL, element_count INTEGER, crux TEXT NOT NULL, lighthouse BLOB NOT NULL, checks TEXT,
  artifacts TEXT, steps TEXT, step_results BLOB, step_parts TEXT,
  PRIMARY KEY (snapshot_id, seq));`,
  steps: [
    {
      version: 2,
      adds: 'the cells an update could not measure',
      up: addColumns('snapshots', "missing TEXT NOT NULL DEFAULT '[]'"),
    },
    { version: 4, adds: 'budget checks on results', up: addColumns('results', 'checks TEXT') },
    {
      version: 5,
      adds: "the version of each snapshot's KPI records",
      up: addColumns('snapshots', 'kpi_version INTEGER NOT NULL DEFAULT 1'),
    },
    {
      version: 7,
      adds: 'snapshots whose budget events are not yet in the outbox',
      up: addColumns('snapshots', 'alerts_pending_since INTEGER'),
    },
    { version: 9, adds: 'the code change a snapshot measured (JSON)', up: addColumns('snapshots', 'revision TEXT') },
    {
      version: 18,
      adds: "the states of each cell's artifacts (JSON)",
      up: addColumns('results', 'artifacts TEXT'),
    },
    {
      version: 20,
      adds: "a flow's steps on each cell (JSON), their further results and those results' lengths",
      up: addColumns('results', 'steps TEXT', 'step_results BLOB', 'step_parts TEXT'),
    },
  ],
  // Needs the column of step 7 first.
  indexes:
    'CREATE INDEX IF NOT EXISTS snapshots_alerts_pending ON snapshots (alerts_pending_since) WHERE alerts_pending_since IS NOT NULL',
};

const snapshotRow = asRecord(snapshotRecords(sqliteForms).snapshot);
const unannouncedRow = asRecord(
  z.object({
    projectId: z.string(),
    userId: z.string(),
    url: z.string(),
    updateId: z.string(),
    date: ms,
    alertsPendingSince: ms,
  }),
).transform(({ alertsPendingSince, ...rest }): UnannouncedSnapshot => ({ ...rest, storedAt: alertsPendingSince }));

/**
 * Snapshots in SQLite (`snapshots`, their cells in `results`, their KPI records in `kpis`): a
 * snapshot is written in one transaction, so a crash mid-write leaves nothing half-written.
 */
export class SqliteSnapshots implements SnapshotsStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async saveSnapshot(snapshot: NewSnapshot): Promise<Date> {
    const { project, updateId, date, updateType, results, missing, kpiVersion = 1, revision } = snapshot;
    // Compressed before the transaction: the write itself then takes milliseconds.
    const compressed = await Promise.all(results.map((r) => r.lighthouse.gzip()));
    const stepGzips = await Promise.all(
      results.map(async (r) =>
        r.steps ? joinedStepGzips(await Promise.all(r.steps.slice(1).map((step) => step.lighthouse.gzip()))) : null,
      ),
    );
    return this.#db.transaction(() => {
      // Idempotent per update: a second save of the same update returns the first one's date.
      const earlier = this.#db.get('SELECT date FROM snapshots WHERE update_id = ?', updateId) as
        { date: number } | undefined;
      if (earlier) return new Date(earlier.date);
      const stored = this.#freeDate(project, date);
      const snapshotId = newId();
      this.#db.run(
        'INSERT INTO snapshots (id, project_id, user_id, update_id, url, domain, date, update_type, available, missing, kpi_version, alerts_pending_since, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        snapshotId,
        project.id,
        project.userId,
        updateId,
        project.url,
        project.domain,
        stored.getTime(),
        updateType,
        JSON.stringify(availableCells(results)),
        JSON.stringify(missing ?? []),
        kpiVersion,
        // Its budget events are owed in the same transaction; the outbox write that follows settles them.
        announcesEvents(results) ? Date.now() : null,
        revision ? JSON.stringify(revision) : null,
      );
      const { id: projectId, userId, domain, url } = project;
      const place = {
        snapshotId,
        projectId,
        userId,
        date: stored,
        domain,
        url,
        updateType,
        ...revisionMember(revision),
      };
      this.#insertCells(place, results, compressed, stepGzips);
      return stored;
    });
  }

  /** A snapshot's results (their results compressed as `compressed`, in order) and their KPI records. */
  #insertCells(
    place: KpiPlace,
    results: NewSnapshot['results'],
    compressed: readonly Buffer[],
    stepGzips: ReadonlyArray<{ bytes: Buffer; parts: string } | null>,
  ): void {
    const insertResult = this.#db.prepared(
      'INSERT INTO results (snapshot_id, seq, device, location, median, runs, element_count, crux, lighthouse, checks, artifacts, steps, step_results, step_parts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    results.forEach((r, seq) => {
      insertResult.run(
        place.snapshotId,
        seq,
        r.device,
        r.location,
        r.median,
        JSON.stringify(r.runs),
        r.elementCount,
        JSON.stringify(r.crux),
        compressed[seq]!,
        r.checks ? JSON.stringify(r.checks) : null,
        r.artifacts ? JSON.stringify(r.artifacts) : null,
        r.steps ? JSON.stringify(r.steps.map(storedStep)) : null,
        stepGzips[seq]?.bytes ?? null,
        stepGzips[seq]?.parts ?? null,
      );
    });
    insertKpis(this.#db, placedKpis(place, results));
  }

  /** The first of the snapshot's dates (snapshotDates) its project has no snapshot at. */
  #freeDate(project: ProjectRecord, date: Date): Date {
    for (const candidate of snapshotDates(date))
      if (!this.#db.get('SELECT 1 FROM snapshots WHERE project_id = ? AND date = ?', project.id, candidate.getTime()))
        return candidate;
    throw new NoFreeSnapshotDate(project.url, date);
  }

  async listUnannouncedSnapshots(storedBefore: Date, limit: number): Promise<UnannouncedSnapshot[]> {
    return this.#db
      .all(
        'SELECT project_id, user_id, url, update_id, date, alerts_pending_since FROM snapshots WHERE alerts_pending_since <= ? ORDER BY alerts_pending_since LIMIT ?',
        storedBefore.getTime(),
        limit,
      )
      .map((row) => unannouncedRow.parse(row));
  }

  async markSnapshotAnnounced(updateId: string): Promise<void> {
    this.#db.run('UPDATE snapshots SET alerts_pending_since = NULL WHERE update_id = ?', updateId);
  }

  async deleteSnapshotsBefore(before: Date, limit: number): Promise<number> {
    const sql = 'SELECT id FROM snapshots WHERE date < ? LIMIT ?';
    const old = this.#db.all(sql, before.getTime(), limit) as Array<{ id: string }>;
    for (const { id } of old) {
      this.#db.transaction(() => {
        this.#db.run('DELETE FROM kpis WHERE snapshot_id = ?', id);
        this.#db.run('DELETE FROM results WHERE snapshot_id = ?', id);
        this.#db.run('DELETE FROM snapshots WHERE id = ?', id);
      });
    }
    return old.length;
  }

  async deleteOrphans(_olderThan: Date): Promise<number> {
    // A snapshot and its records are written in one transaction: orphans come only from a file
    // edited by hand or an interrupted deletion of an earlier version.
    return this.#db.transaction(() => {
      const kpis = this.#db.changes(
        "DELETE FROM kpis WHERE snapshot_id NOT IN (SELECT id FROM snapshots) AND snapshot_id NOT LIKE 'history:%'",
      );
      return kpis + this.#db.changes('DELETE FROM results WHERE snapshot_id NOT IN (SELECT id FROM snapshots)');
    });
  }

  async findSnapshotOfUpdate(updateId: string): Promise<{ date: Date; missing: MissingCell[] } | null> {
    // A snapshot row exists only once its transaction committed: it is complete.
    const raw = this.#db.get('SELECT * FROM snapshots WHERE update_id = ?', updateId);
    if (!raw) return null;
    const { date, missing } = snapshotRow.parse(raw);
    return { date, missing };
  }
}

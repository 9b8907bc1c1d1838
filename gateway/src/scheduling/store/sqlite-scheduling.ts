import { asRecord, ms, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import { projectRecords, type ProjectRecord } from '../../projects/store/projects-store.ts';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import type { SchedulingStore } from './scheduling-store.ts';

/** The `leases` table (each project's last tick is a column of the projects slice's table). */
export const schedulingSchema: SqliteSchema = {
  tables:
    'CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL);',
};

const scheduledProjectRow = asRecord(projectRecords(sqliteForms).project.extend({ scheduledThrough: ms.nullable() }));

/** The scheduler's lease (`leases`) and each project's last tick handled (a column of `projects`). */
export class SqliteScheduling implements SchedulingStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const changed = this.#db.changes(
      'INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE leases.holder = excluded.holder OR leases.expires_at < ?',
      name,
      holder,
      now + ttlMs,
      now,
    );
    return changed === 1;
  }

  async listScheduledProjects(): Promise<Array<ProjectRecord & { scheduledThrough: Date | null }>> {
    return this.#db.unreadable
      .parseEach('project', scheduledProjectRow, this.#db.all('SELECT * FROM projects WHERE schedule IS NOT NULL'))
      .map(({ scheduledThrough, ...project }) => ({ ...project, scheduledThrough }));
  }

  async markScheduled(projectId: string, tick: Date): Promise<void> {
    this.#db.run(
      'UPDATE projects SET scheduled_through = ? WHERE id = ? AND (scheduled_through IS NULL OR scheduled_through < ?)',
      tick.getTime(),
      projectId,
      tick.getTime(),
    );
  }
}

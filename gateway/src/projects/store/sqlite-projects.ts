import { storedBudgets, type Budgets, type Flow } from '@perfwatch/common';
import { asRecord, duplicateOr, newId, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import { addColumns, type SqliteSchema } from '../../store/sqlite-migrations.ts';
import {
  newProjectRecord,
  projectRecords,
  type NewProject,
  type ProjectRecord,
  type ProjectSettings,
  type ProjectsStore,
} from './projects-store.ts';

const NO_BUDGETS = '{"budgets":{},"maxRegression":{}}';

/** The `projects` table (with the scheduler's last tick handled, `scheduled_through`). */
export const projectsSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS projects (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, url TEXT NOT NULL, domain TEXT NOT NULL, locations TEXT NOT NULL,
  default_location TEXT NOT NULL, runs INTEGER NOT NULL, schedule TEXT, created_at INTEGER NOT NULL, scheduled_through INTEGER,
  budgets TEXT NOT NULL DEFAULT '${NO_BUDGETS}', auth TEXT, devices TEXT, crux TEXT, site_id TEXT, flow TEXT,
  UNIQUE (user_id, url));`,
  steps: [
    {
      version: 4,
      adds: 'budgets on projects',
      up: addColumns('projects', `budgets TEXT NOT NULL DEFAULT '${NO_BUDGETS}'`),
    },
    {
      version: 6,
      adds: "a project's sealed credentials",
      up: addColumns('projects', 'auth TEXT'),
    },
    {
      // NULL in both: never set, today's behaviour (both devices; field data when keyed).
      version: 13,
      adds: "a project's devices and CrUX opt-in (JSON)",
      up: addColumns('projects', 'devices TEXT', 'crux TEXT'),
      mends: true,
    },
    {
      // NULL: made by hand, as every project before sites.
      version: 15,
      adds: 'the site a project is a sampled page of (issue 34)',
      up: addColumns('projects', 'site_id TEXT'),
      mends: true,
    },
    {
      // NULL: a navigation of the project's URL, as every project before flows.
      version: 19,
      adds: "a project's user flow (JSON, issue 36)",
      up: addColumns('projects', 'flow TEXT'),
    },
  ],
};

/** A setting kept as JSON text; never set: NULL. */
const jsonOrNull = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));

/** A project row as its record. */
const projectRow = asRecord(projectRecords(sqliteForms).project);

/** Projects in SQLite: the `projects` table (a removal clears the project's data in the others). */
export class SqliteProjects implements ProjectsStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async addProject(project: NewProject): Promise<ProjectRecord> {
    const record = newProjectRecord(project, newId(), new Date());
    try {
      this.#db.run(
        'INSERT INTO projects (id, user_id, url, domain, locations, default_location, runs, schedule, created_at, budgets, auth, devices, crux, site_id, flow) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        record.id,
        record.userId,
        record.url,
        record.domain,
        JSON.stringify(record.locations),
        record.defaultLocation,
        record.runs,
        record.schedule,
        record.createdAt.getTime(),
        JSON.stringify(storedBudgets(record.budgets)),
        record.auth,
        jsonOrNull(record.devices),
        jsonOrNull(record.crux),
        record.siteId,
        jsonOrNull(record.flow),
      );
    } catch (error) {
      throw duplicateOr(error, `project ${project.url} exists for this user`);
    }
    return record;
  }

  async findProject(userId: string, url: string): Promise<ProjectRecord | null> {
    const row = this.#db.get('SELECT * FROM projects WHERE user_id = ? AND url = ?', userId, url);
    return row ? projectRow.parse(row) : null;
  }

  async listProjects(userId?: string): Promise<ProjectRecord[]> {
    const rows = userId
      ? this.#db.all('SELECT * FROM projects WHERE user_id = ? ORDER BY url', userId)
      : this.#db.all('SELECT * FROM projects ORDER BY url');
    return this.#db.unreadable.parseEach('project', projectRow, rows);
  }

  async removeProject(userId: string, url: string): Promise<boolean> {
    const project = await this.findProject(userId, url);
    if (!project) return false;
    this.#db.transaction(() => {
      this.#db.run('DELETE FROM kpis WHERE project_id = ?', project.id);
      this.#db.run(
        'DELETE FROM results WHERE snapshot_id IN (SELECT id FROM snapshots WHERE project_id = ?)',
        project.id,
      );
      this.#db.run('DELETE FROM snapshots WHERE project_id = ?', project.id);
      this.#db.run('DELETE FROM annotations WHERE project_id = ?', project.id);
      // Its repository link (a sealed forge token) and its preview mark; events stay for the reporter.
      this.#db.run('DELETE FROM forge_links WHERE project_id = ?', project.id);
      this.#db.run('DELETE FROM forge_previews WHERE preview_project_id = ?', project.id);
      this.#db.run('DELETE FROM projects WHERE id = ?', project.id);
    });
    return true;
  }

  async setProjectSettings(projectId: string, settings: ProjectSettings): Promise<void> {
    this.#db.run(
      'UPDATE projects SET locations = ?, default_location = ?, runs = ?, schedule = ?, devices = ?, crux = ? WHERE id = ?',
      JSON.stringify(settings.locations),
      settings.defaultLocation,
      settings.runs,
      settings.schedule,
      jsonOrNull(settings.devices),
      jsonOrNull(settings.crux),
      projectId,
    );
  }

  async setProjectBudgets(projectId: string, budgets: Budgets): Promise<void> {
    this.#db.run('UPDATE projects SET budgets = ? WHERE id = ?', JSON.stringify(storedBudgets(budgets)), projectId);
  }

  async setProjectFlow(projectId: string, flow: Flow | null): Promise<void> {
    this.#db.run('UPDATE projects SET flow = ? WHERE id = ?', jsonOrNull(flow), projectId);
  }

  async setProjectAuth(projectId: string, sealed: string | null): Promise<void> {
    this.#db.run('UPDATE projects SET auth = ? WHERE id = ?', sealed, projectId);
  }

  async replaceProjectAuth(projectId: string, expected: string, sealed: string): Promise<boolean> {
    return (
      this.#db.changes('UPDATE projects SET auth = ? WHERE id = ? AND auth = ?', sealed, projectId, expected) === 1
    );
  }
}

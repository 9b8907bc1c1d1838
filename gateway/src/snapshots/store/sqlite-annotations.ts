import { asRecord, newId, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import {
  annotationRecords,
  type AnnotationRecord,
  type AnnotationsStore,
  type NewAnnotation,
} from './annotations-store.ts';

/** The `annotations` table. */
export const annotationsSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS annotations (
  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, date INTEGER NOT NULL, text TEXT NOT NULL, link TEXT, created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS annotations_by_project ON annotations (project_id, date);`,
};

const annotationRow = asRecord(annotationRecords(sqliteForms).annotation);

/** Annotations in SQLite: the `annotations` table. */
export class SqliteAnnotations implements AnnotationsStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async addAnnotation(annotation: NewAnnotation): Promise<AnnotationRecord> {
    const record: AnnotationRecord = { ...annotation, id: newId(), createdAt: new Date() };
    this.#db.insertRecord('annotations', record);
    return record;
  }

  async listAnnotations(
    projectId: string,
    range: { from?: Date; to?: Date; limit?: number } = {},
  ): Promise<AnnotationRecord[]> {
    const bounds = [projectId, range.from?.getTime() ?? 0, range.to?.getTime() ?? Number.MAX_SAFE_INTEGER] as const;
    const rows =
      range.limit === undefined
        ? this.#db.all(
            'SELECT * FROM annotations WHERE project_id = ? AND date >= ? AND date < ? ORDER BY date, created_at',
            ...bounds,
          )
        : this.#db
            .all(
              'SELECT * FROM annotations WHERE project_id = ? AND date >= ? AND date < ? ORDER BY date DESC, created_at DESC LIMIT ?',
              ...bounds,
              range.limit,
            )
            .reverse();
    return this.#db.unreadable.parseEach('annotation', annotationRow, rows);
  }

  async countAnnotations(projectId: string): Promise<number> {
    return (this.#db.get('SELECT count(*) AS n FROM annotations WHERE project_id = ?', projectId) as { n: number }).n;
  }

  async removeAnnotation(projectId: string, id: string): Promise<boolean> {
    return this.#db.changes('DELETE FROM annotations WHERE id = ? AND project_id = ?', id, projectId) === 1;
  }

  async deleteAnnotationsBefore(before: Date): Promise<number> {
    return this.#db.changes('DELETE FROM annotations WHERE date < ?', before.getTime());
  }
}

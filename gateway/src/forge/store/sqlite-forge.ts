import type { Forge } from '@perfwatch/common';
import { asRecord, duplicateOr, placeholders, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import {
  forgeRecords,
  MAX_REPORT_ERROR,
  newForgeEventRecord,
  type ForgeEventRecord,
  type ForgeLinkRecord,
  type ForgeStore,
  type LinkSecrets,
  type NewForgeEvent,
} from './forge-store.ts';

/**
 * The `forge_links`, `forge_previews` and `forge_events` tables. New tables need no numbered
 * step: every open makes the tables a file lacks, and a step would raise the file's version
 * past steps other slices may be adding at the same time.
 */
export const forgeSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS forge_links (
  project_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, forge TEXT NOT NULL, repository TEXT NOT NULL,
  repository_key TEXT NOT NULL, api_url TEXT NOT NULL, token_sealed TEXT NOT NULL, webhook_secret_sealed TEXT,
  webhook_secret_digest TEXT, preview_url TEXT, default_branch TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS forge_links_by_repository ON forge_links (forge, repository_key);
CREATE TABLE IF NOT EXISTS forge_previews (preview_project_id TEXT PRIMARY KEY, link_project_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS forge_events (
  key TEXT PRIMARY KEY, forge TEXT NOT NULL, link_project_id TEXT NOT NULL, preview_project_id TEXT NOT NULL,
  preview_url TEXT NOT NULL, update_id TEXT, revision TEXT NOT NULL, received_at INTEGER NOT NULL,
  reported_at INTEGER, report_attempts INTEGER NOT NULL, last_report_error TEXT, next_attempt_at INTEGER);
CREATE INDEX IF NOT EXISTS forge_events_unreported ON forge_events (reported_at, received_at);`,
};

const records = forgeRecords(sqliteForms);
const linkRow = asRecord(records.link);
const eventRow = asRecord(records.event);

/** Forge links, preview marks and events in SQLite. */
export class SqliteForge implements ForgeStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async setForgeLink(link: ForgeLinkRecord): Promise<void> {
    this.#db.transaction(() => {
      this.#db.run('DELETE FROM forge_links WHERE project_id = ?', link.projectId);
      this.#db.insertRecord('forge_links', link);
    });
  }

  async findForgeLink(projectId: string): Promise<ForgeLinkRecord | null> {
    const row = this.#db.get('SELECT * FROM forge_links WHERE project_id = ?', projectId);
    return row ? linkRow.parse(row) : null;
  }

  async removeForgeLink(projectId: string): Promise<boolean> {
    return this.#db.changes('DELETE FROM forge_links WHERE project_id = ?', projectId) === 1;
  }

  async replaceForgeLinkSecrets(projectId: string, expected: string, sealed: LinkSecrets): Promise<boolean> {
    const changed = this.#db.changes(
      'UPDATE forge_links SET token_sealed = ?, webhook_secret_sealed = ? WHERE project_id = ? AND token_sealed = ?',
      sealed.tokenSealed,
      sealed.webhookSecretSealed,
      projectId,
      expected,
    );
    return changed === 1;
  }

  async listForgeLinks(forge: Forge, repositoryKeys: readonly string[]): Promise<ForgeLinkRecord[]> {
    if (repositoryKeys.length === 0) return [];
    const rows = this.#db.all(
      `SELECT * FROM forge_links WHERE forge = ? AND repository_key IN (${placeholders(repositoryKeys)})`,
      forge,
      ...repositoryKeys,
    );
    return this.#db.unreadable.parseEach('forge link', linkRow, rows);
  }

  async markPreviewProject(previewProjectId: string, linkProjectId: string): Promise<void> {
    this.#db.run(
      'INSERT INTO forge_previews (preview_project_id, link_project_id) VALUES (?, ?) ON CONFLICT DO NOTHING',
      previewProjectId,
      linkProjectId,
    );
  }

  async previewOf(projectId: string): Promise<string | null> {
    const row = this.#db.get('SELECT link_project_id FROM forge_previews WHERE preview_project_id = ?', projectId) as
      { link_project_id: string } | undefined;
    return row?.link_project_id ?? null;
  }

  async listPreviewProjects(): Promise<string[]> {
    const rows = this.#db.all('SELECT preview_project_id FROM forge_previews') as Array<{ preview_project_id: string }>;
    return rows.map((row) => row.preview_project_id);
  }

  async addForgeEvent(event: NewForgeEvent): Promise<void> {
    const record = newForgeEventRecord(event);
    try {
      this.#db.insertRecord('forge_events', { ...record, revision: JSON.stringify(record.revision) });
    } catch (error) {
      throw duplicateOr(error, `forge event ${event.key} was received already`);
    }
  }

  async findForgeEvent(key: string): Promise<ForgeEventRecord | null> {
    const row = this.#db.get('SELECT * FROM forge_events WHERE key = ?', key);
    return row ? eventRow.parse(row) : null;
  }

  async setForgeEventUpdate(key: string, updateId: string): Promise<void> {
    this.#db.run('UPDATE forge_events SET update_id = ? WHERE key = ?', updateId, key);
  }

  async removeForgeEvent(key: string): Promise<void> {
    this.#db.run('DELETE FROM forge_events WHERE key = ?', key);
  }

  async listUnreportedForgeEvents(limit: number, now = new Date()): Promise<ForgeEventRecord[]> {
    const rows = this.#db.all(
      `SELECT * FROM forge_events WHERE reported_at IS NULL AND update_id IS NOT NULL
         AND (next_attempt_at IS NULL OR next_attempt_at <= ?) ORDER BY received_at, key LIMIT ?`,
      now.getTime(),
      limit,
    );
    return this.#db.unreadable.parseEach('forge event', eventRow, rows);
  }

  async claimForgeEvent(
    { key, reportAttempts }: Pick<ForgeEventRecord, 'key' | 'reportAttempts'>,
    now: Date,
    until: Date,
  ): Promise<boolean> {
    // One statement: SQLite runs it alone, so two claims at once cannot both match.
    return (
      this.#db.changes(
        `UPDATE forge_events SET next_attempt_at = ?
           WHERE key = ? AND report_attempts = ? AND reported_at IS NULL
             AND (next_attempt_at IS NULL OR next_attempt_at <= ?)`,
        until.getTime(),
        key,
        reportAttempts,
        now.getTime(),
      ) === 1
    );
  }

  async deferForgeEvent(key: string, until: Date): Promise<void> {
    this.#db.run(
      'UPDATE forge_events SET next_attempt_at = ? WHERE key = ? AND reported_at IS NULL',
      until.getTime(),
      key,
    );
  }

  async markForgeEventReported(key: string, at: Date): Promise<void> {
    this.#db.run('UPDATE forge_events SET reported_at = ?, next_attempt_at = NULL WHERE key = ?', at.getTime(), key);
  }

  async recordForgeReportFailure(key: string, error: string, nextAttemptAt: Date): Promise<void> {
    this.#db.run(
      `UPDATE forge_events SET report_attempts = report_attempts + 1, last_report_error = ?, next_attempt_at = ?
         WHERE key = ?`,
      error.slice(0, MAX_REPORT_ERROR),
      nextAttemptAt.getTime(),
      key,
    );
  }

  async deleteForgeEventsBefore(before: Date): Promise<number> {
    return this.#db.changes('DELETE FROM forge_events WHERE received_at < ?', before.getTime());
  }
}

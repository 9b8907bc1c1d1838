import { asColumn, asRecord, newId, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import {
  attemptChanges,
  queuedDelivery,
  webhookRecords,
  WebhookLimitReached,
  type DeliveryAttempt,
  type DeliveryRecord,
  type NewDelivery,
  type NewWebhook,
  type WebhookRecord,
  type WebhooksStore,
} from './webhooks-store.ts';

/** The `webhooks` table and their outbox, `deliveries`. */
export const webhooksSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS webhooks (
  id TEXT PRIMARY KEY, user_id TEXT NOT NULL, target_url TEXT NOT NULL, project_url TEXT, format TEXT NOT NULL,
  secret TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY, webhook_id TEXT NOT NULL, user_id TEXT NOT NULL, event TEXT NOT NULL, body TEXT NOT NULL,
  status TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL, last_error TEXT,
  created_at INTEGER NOT NULL, delivered_at INTEGER);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS deliveries_by_webhook ON deliveries (webhook_id, created_at);`,
};

const records = webhookRecords(sqliteForms);
const webhookRow = asRecord(records.webhook);
const deliveryRow = asRecord(records.delivery);

/** Webhooks and their outbox in SQLite: the `webhooks` and `deliveries` tables. */
export class SqliteWebhooks implements WebhooksStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async addWebhook(webhook: NewWebhook, maxPerUser = Infinity): Promise<WebhookRecord> {
    const record: WebhookRecord = { ...webhook, id: newId(), createdAt: new Date() };
    // Counted and written in one transaction: the file has one writer at a time.
    this.#db.transaction(() => {
      const { held } = this.#db.get('SELECT COUNT(*) AS held FROM webhooks WHERE user_id = ?', webhook.userId) as {
        held: number;
      };
      if (held >= maxPerUser) throw new WebhookLimitReached(maxPerUser);
      this.#db.insertRecord('webhooks', record);
    });
    return record;
  }

  async findWebhook(id: string): Promise<WebhookRecord | null> {
    const row = this.#db.get('SELECT * FROM webhooks WHERE id = ?', id);
    return row ? webhookRow.parse(row) : null;
  }

  async setWebhookSecret(id: string, secret: string): Promise<void> {
    this.#db.run('UPDATE webhooks SET secret = ? WHERE id = ?', secret, id);
  }

  async listWebhooks(userId: string): Promise<WebhookRecord[]> {
    return this.#db.unreadable.parseEach(
      'webhook',
      webhookRow,
      this.#db.all('SELECT * FROM webhooks WHERE user_id = ? ORDER BY created_at, id', userId),
    );
  }

  async removeWebhook(userId: string, id: string): Promise<boolean> {
    return this.#db.transaction(() => {
      const removed = this.#db.changes('DELETE FROM webhooks WHERE id = ? AND user_id = ?', id, userId) === 1;
      if (removed) this.#db.run('DELETE FROM deliveries WHERE webhook_id = ?', id);
      return removed;
    });
  }

  async enqueueDeliveries(deliveries: readonly NewDelivery[]): Promise<void> {
    // ON CONFLICT DO NOTHING: a delivery already in the outbox keeps its state.
    this.#db.transaction(() => {
      for (const d of deliveries) {
        const { id, webhookId, userId } = d;
        const row = { id, webhookId, userId, ...queuedDelivery(d) };
        this.#db.insertRecord('deliveries', row, 'ON CONFLICT (id) DO NOTHING');
      }
    });
  }

  async claimDeliveries(
    now: Date,
    limit: number,
    leaseMs: number,
    exceptUsers: readonly string[] = [],
  ): Promise<DeliveryRecord[]> {
    // The users left out as one JSON array: one statement text whatever their number.
    return this.#db
      .all(
        "UPDATE deliveries SET next_attempt_at = ? WHERE id IN (SELECT id FROM deliveries WHERE status = 'pending' AND next_attempt_at <= ? AND user_id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at LIMIT ?) RETURNING *",
        now.getTime() + leaseMs,
        now.getTime(),
        JSON.stringify(exceptUsers),
        limit,
      )
      .map((row) => deliveryRow.parse(row));
  }

  async recordDeliveryAttempt(id: string, attempt: DeliveryAttempt): Promise<void> {
    const changes = Object.entries(attemptChanges(attempt));
    this.#db.run(
      `UPDATE deliveries SET attempts = attempts + 1, ${changes.map(([field]) => `${this.#db.column(field)} = ?`).join(', ')} WHERE id = ?`,
      ...changes.map(([, value]) => asColumn(value)),
      id,
    );
  }

  async listDeliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.#db.unreadable.parseEach(
      'delivery',
      deliveryRow,
      this.#db.all(
        'SELECT * FROM deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id DESC LIMIT ?',
        webhookId,
        limit,
      ),
    );
  }

  async deleteDeliveriesBefore(before: Date): Promise<number> {
    return this.#db.changes("DELETE FROM deliveries WHERE status != 'pending' AND created_at < ?", before.getTime());
  }
}

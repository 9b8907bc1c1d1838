import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import { asRecord, duplicateOr, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import { ssoRecords, type IdentityRecord, type SessionRecord, type SsoStore } from './sso-store.ts';

const records = ssoRecords(sqliteForms);
const sessionRow = asRecord(records.session);
const identityRow = asRecord(records.identity);

const TABLES = `
CREATE TABLE IF NOT EXISTS sso_sessions (digest TEXT PRIMARY KEY, user_id TEXT NOT NULL, user_name TEXT NOT NULL, org_id TEXT NOT NULL, csrf_token TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sso_sessions_expiry ON sso_sessions (expires_at);
CREATE TABLE IF NOT EXISTS sso_identities (issuer TEXT NOT NULL, subject TEXT NOT NULL, user_id TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (issuer, subject), UNIQUE (issuer, user_id));`;

/** The `sso_sessions` and `sso_identities` tables. */
export const ssoSchema: SqliteSchema = {
  tables: TABLES,
  steps: [
    {
      version: 12,
      adds: "single sign-on's sessions and provider identities (issue 33)",
      // The tables are made at every open (CREATE … IF NOT EXISTS): the number tells an older perfwatch off.
      mends: true,
      up: (db) => db.exec(TABLES),
    },
  ],
};

/** SSO sessions and identities in SQLite. */
export class SqliteSso implements SsoStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async addSession(session: SessionRecord): Promise<void> {
    this.#db.run(
      'INSERT INTO sso_sessions (digest, user_id, user_name, org_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      session.digest,
      session.userId,
      session.userName,
      session.orgId,
      session.csrfToken,
      session.createdAt.getTime(),
      session.expiresAt.getTime(),
    );
  }

  async findSession(digest: string): Promise<SessionRecord | null> {
    const row = this.#db.get('SELECT * FROM sso_sessions WHERE digest = ?', digest);
    return row ? sessionRow.parse(row) : null;
  }

  async setSessionOrganisation(digest: string, orgId: string): Promise<boolean> {
    return this.#db.changes('UPDATE sso_sessions SET org_id = ? WHERE digest = ?', orgId, digest) === 1;
  }

  async removeSession(digest: string): Promise<boolean> {
    return this.#db.changes('DELETE FROM sso_sessions WHERE digest = ?', digest) === 1;
  }

  async removeExpiredSessions(now: Date): Promise<number> {
    return this.#db.changes('DELETE FROM sso_sessions WHERE expires_at < ?', now.getTime());
  }

  async findIdentity(issuer: string, subject: string): Promise<IdentityRecord | null> {
    const row = this.#db.get('SELECT * FROM sso_identities WHERE issuer = ? AND subject = ?', issuer, subject);
    return row ? identityRow.parse(row) : null;
  }

  async findUserIdentity(issuer: string, userId: string): Promise<IdentityRecord | null> {
    const row = this.#db.get('SELECT * FROM sso_identities WHERE issuer = ? AND user_id = ?', issuer, userId);
    return row ? identityRow.parse(row) : null;
  }

  async addIdentity(identity: IdentityRecord): Promise<void> {
    try {
      this.#db.run(
        'INSERT INTO sso_identities (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)',
        identity.issuer,
        identity.subject,
        identity.userId,
        identity.createdAt.getTime(),
      );
    } catch (error) {
      throw duplicateOr(error, `the identity ${identity.subject} at ${identity.issuer} or its user is linked already`);
    }
  }
}

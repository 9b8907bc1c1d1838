import type { DatabaseSync } from 'node:sqlite';
import type { SqliteSchema } from '../../store/sqlite-migrations.ts';
import { asRecord, duplicateOr, newId, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import {
  teamRecords,
  type MembershipRecord,
  type NewMembership,
  type OrganisationRecord,
  type TeamsStore,
} from './teams-store.ts';

const records = teamRecords(sqliteForms);
const organisationRow = asRecord(records.organisation);
const membershipRow = asRecord(records.membership);

/**
 * Every user lacking an organisation of their own gains one (the user's id and name) with the
 * user as its admin; users made without one (single sign-on's, `own_organisation = 0`) do not.
 * The memberships go first, decided on the same "no organisation yet" as the organisations,
 * so a membership removed from an organisation that exists is never given back. A name another
 * organisation already holds is left alone (OR IGNORE): an open never fails on it.
 */
const OWN_ORGANISATIONS = `
INSERT OR IGNORE INTO memberships (org_id, user_id, role, source, created_at)
  SELECT u.id, u.id, 'admin', 'manual', u.created_at FROM users u
  WHERE u.own_organisation <> 0 AND NOT EXISTS (SELECT 1 FROM organisations o WHERE o.id = u.id OR o.name = u.name);
INSERT OR IGNORE INTO organisations (id, name, created_at)
  SELECT u.id, u.name, u.created_at FROM users u
  WHERE u.own_organisation <> 0 AND NOT EXISTS (SELECT 1 FROM organisations o WHERE o.id = u.id);`;

/** The migration's work, in one transaction: both kinds of row, or neither. */
function giveOwnOrganisations(db: DatabaseSync): void {
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(OWN_ORGANISATIONS);
    db.exec('COMMIT');
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** The `organisations` and `memberships` tables. */
export const teamsSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS organisations (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS memberships (org_id TEXT NOT NULL, user_id TEXT NOT NULL, role TEXT NOT NULL, source TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (org_id, user_id));`,
  steps: [
    {
      version: 10,
      adds: "every user's organisation of their own, the user its admin (issue 33)",
      // Checks for itself, so it runs at every open: a file is mended whichever steps ran before.
      mends: true,
      up: giveOwnOrganisations,
    },
  ],
  indexes: 'CREATE INDEX IF NOT EXISTS memberships_by_user ON memberships (user_id, created_at);',
};

/**
 * A new user's own organisation and their admin membership of it, in the transaction that
 * adds the user (SqliteAccounts.createUser). DuplicateError: an organisation has the name.
 */
export function insertOwnOrganisation(db: SqliteDatabase, user: { id: string; name: string; createdAt: Date }): void {
  try {
    db.run('INSERT INTO organisations (id, name, created_at) VALUES (?, ?, ?)', user.id, user.name, +user.createdAt);
  } catch (error) {
    throw duplicateOr(error, `an organisation is named ${JSON.stringify(user.name)}`);
  }
  db.run(
    "INSERT INTO memberships (org_id, user_id, role, source, created_at) VALUES (?, ?, 'admin', 'manual', ?)",
    user.id,
    user.id,
    +user.createdAt,
  );
}

/** Organisations and memberships in SQLite: the `organisations` and `memberships` tables. */
export class SqliteTeams implements TeamsStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async createOrganisation({ name, id = newId() }: { name: string; id?: string }): Promise<OrganisationRecord> {
    const organisation = { id, name, createdAt: new Date() };
    try {
      this.#db.run(
        'INSERT INTO organisations (id, name, created_at) VALUES (?, ?, ?)',
        id,
        name,
        +organisation.createdAt,
      );
    } catch (error) {
      throw duplicateOr(error, `organisation ${JSON.stringify(name)} exists`);
    }
    return organisation;
  }

  async findOrganisation(id: string): Promise<OrganisationRecord | null> {
    const row = this.#db.get('SELECT * FROM organisations WHERE id = ?', id);
    return row ? organisationRow.parse(row) : null;
  }

  async findOrganisationByName(name: string): Promise<OrganisationRecord | null> {
    const row = this.#db.get('SELECT * FROM organisations WHERE name = ?', name);
    return row ? organisationRow.parse(row) : null;
  }

  async listOrganisations(): Promise<OrganisationRecord[]> {
    const rows = this.#db.all('SELECT * FROM organisations ORDER BY name');
    return this.#db.unreadable.parseEach('organisation', organisationRow, rows);
  }

  async setMembership({ orgId, userId, role, source }: NewMembership): Promise<void> {
    this.#db.run(
      `INSERT INTO memberships (org_id, user_id, role, source, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (org_id, user_id) DO UPDATE SET role = excluded.role, source = excluded.source`,
      orgId,
      userId,
      role,
      source,
      Date.now(),
    );
  }

  async findMembership(orgId: string, userId: string): Promise<MembershipRecord | null> {
    const row = this.#db.get('SELECT * FROM memberships WHERE org_id = ? AND user_id = ?', orgId, userId);
    return row ? membershipRow.parse(row) : null;
  }

  async listMembers(orgId: string): Promise<MembershipRecord[]> {
    const rows = this.#db.all('SELECT * FROM memberships WHERE org_id = ? ORDER BY created_at, user_id', orgId);
    return this.#db.unreadable.parseEach('membership', membershipRow, rows);
  }

  async listMemberships(userId: string): Promise<MembershipRecord[]> {
    const rows = this.#db.all('SELECT * FROM memberships WHERE user_id = ? ORDER BY created_at, org_id', userId);
    return this.#db.unreadable.parseEach('membership', membershipRow, rows);
  }

  async removeMembership(orgId: string, userId: string): Promise<boolean> {
    return this.#db.transaction(() => {
      const removed = this.#db.changes('DELETE FROM memberships WHERE org_id = ? AND user_id = ?', orgId, userId);
      // Tokens made before organisations have no org_id: theirs is their user's own.
      const revoke =
        'UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND COALESCE(org_id, user_id) = ? AND revoked_at IS NULL';
      if (removed === 1) this.#db.run(revoke, Date.now(), userId, orgId);
      return removed === 1;
    });
  }
}

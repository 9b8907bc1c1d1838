import { addColumns, type SqliteSchema } from '../../store/sqlite-migrations.ts';
import { insertOwnOrganisation } from '../../teams/store/sqlite-teams.ts';
import { asRecord, duplicateOr, newId, sqliteForms, type SqliteDatabase } from '../../store/sqlite-database.ts';
import {
  accountRecords,
  type AccountsStore,
  newTokenRecord,
  type NewToken,
  type NewUserOptions,
  type TokenRecord,
  type UserRecord,
} from './accounts-store.ts';

const records = accountRecords(sqliteForms);
const userRow = asRecord(records.user);
const tokenRow = asRecord(records.token);

/** The `users` and `tokens` tables. */
export const accountsSchema: SqliteSchema = {
  tables: `
CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, own_organisation INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS tokens (prefix TEXT PRIMARY KEY, user_id TEXT NOT NULL, digest TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER, expires_at INTEGER, org_id TEXT, scope TEXT, projects TEXT, label TEXT);`,
  steps: [
    {
      version: 8,
      adds: 'when a token expires',
      // Run at every open, so a file is mended whichever migrations ran before it.
      mends: true,
      up: addColumns('tokens', 'expires_at INTEGER'),
    },
    {
      version: 10,
      adds: "a token's organisation, scope, projects and label (issue 33)",
      mends: true,
      up: addColumns('tokens', 'org_id TEXT', 'scope TEXT', 'projects TEXT', 'label TEXT'),
    },
    {
      version: 10,
      // Before the teams slice's step of the same number, which gives the others one (sqlite-teams.ts).
      adds: 'whether a user has an organisation of their own (not those single sign-on makes)',
      mends: true,
      up: addColumns('users', 'own_organisation INTEGER NOT NULL DEFAULT 1'),
    },
  ],
};

/** Users and tokens in SQLite: the `users` and `tokens` tables. */
export class SqliteAccounts implements AccountsStore {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async createUser(name: string, { ownOrganisation = true }: NewUserOptions = {}): Promise<UserRecord> {
    const user = { id: newId(), name, createdAt: new Date() };
    this.#db.transaction(() => {
      try {
        this.#db.run(
          'INSERT INTO users (id, name, created_at, own_organisation) VALUES (?, ?, ?, ?)',
          user.id,
          name,
          user.createdAt.getTime(),
          ownOrganisation ? 1 : 0,
        );
      } catch (error) {
        throw duplicateOr(error, `user ${JSON.stringify(name)} exists`);
      }
      if (ownOrganisation) insertOwnOrganisation(this.#db, user);
    });
    return user;
  }

  async findUserByName(name: string): Promise<UserRecord | null> {
    const row = this.#db.get('SELECT * FROM users WHERE name = ?', name);
    return row ? userRow.parse(row) : null;
  }

  async listUsers(): Promise<UserRecord[]> {
    return this.#db.unreadable.parseEach('user', userRow, this.#db.all('SELECT * FROM users ORDER BY name'));
  }

  async addToken(given: NewToken): Promise<void> {
    const token = newTokenRecord(given, new Date());
    try {
      this.#db.run(
        'INSERT INTO tokens (prefix, user_id, digest, created_at, expires_at, org_id, scope, projects, label) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        token.prefix,
        token.userId,
        token.digest,
        token.createdAt.getTime(),
        token.expiresAt?.getTime() ?? null,
        token.orgId,
        token.scope,
        token.projects === null ? null : JSON.stringify(token.projects),
        token.label,
      );
    } catch (error) {
      throw duplicateOr(error, `token prefix ${token.prefix} exists`);
    }
  }

  async findToken(prefix: string): Promise<TokenRecord | null> {
    const row = this.#db.get('SELECT * FROM tokens WHERE prefix = ?', prefix);
    return row ? tokenRow.parse(row) : null;
  }

  async listTokens(userId: string): Promise<TokenRecord[]> {
    return this.#db.unreadable.parseEach(
      'token',
      tokenRow,
      this.#db.all('SELECT * FROM tokens WHERE user_id = ? ORDER BY created_at, prefix', userId),
    );
  }

  async listOrganisationTokens(orgId: string): Promise<TokenRecord[]> {
    return this.#db.unreadable.parseEach(
      'token',
      tokenRow,
      this.#db.all('SELECT * FROM tokens WHERE COALESCE(org_id, user_id) = ? ORDER BY created_at, prefix', orgId),
    );
  }

  async revokeToken(prefix: string): Promise<boolean> {
    const sql = 'UPDATE tokens SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL';
    return this.#db.changes(sql, Date.now(), prefix) === 1;
  }
}

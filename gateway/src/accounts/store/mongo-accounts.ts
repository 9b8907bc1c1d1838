import { ObjectId, type Collection, type Db } from 'mongodb';
import { asRecord, duplicateOr, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import { insertOwnOrganisation } from '../../teams/store/mongo-teams.ts';
import {
  accountRecords,
  type AccountsStore,
  newTokenRecord,
  type NewToken,
  type NewUserOptions,
  type TokenRecord,
  type UserRecord,
} from './accounts-store.ts';

const records = accountRecords(mongoForms);
const userDoc = asRecord(records.user);
const tokenDoc = records.token;

export const accountIndexes = (db: Db) => [
  db.collection('users').createIndex({ name: 1 }, { unique: true }),
  db.collection('tokens').createIndex({ prefix: 1 }, { unique: true }),
];

/** Users and tokens in MongoDB: the `users` and `tokens` collections. */
export class MongoAccounts implements AccountsStore {
  readonly #base: MongoDatabase;
  readonly #users: Collection;
  readonly #tokens: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#users = base.db.collection('users');
    this.#tokens = base.db.collection('tokens');
  }

  async createUser(name: string, { ownOrganisation = true }: NewUserOptions = {}): Promise<UserRecord> {
    // Only users made without one are marked: users made before organisations have one by the migration.
    const doc = { _id: new ObjectId(), name, createdAt: new Date(), ...(ownOrganisation ? {} : { ownOrganisation }) };
    try {
      await this.#users.insertOne(doc);
    } catch (error) {
      throw duplicateOr(error, `user ${JSON.stringify(name)} exists`);
    }
    if (ownOrganisation)
      try {
        await insertOwnOrganisation(this.#base.db, doc);
      } catch (error) {
        // No transaction on every MongoDB-wire server: the user is taken back instead.
        await this.#users.deleteOne({ _id: doc._id });
        throw error;
      }
    return userDoc.parse(doc);
  }

  async findUserByName(name: string): Promise<UserRecord | null> {
    const doc = await this.#users.findOne({ name });
    return doc ? userDoc.parse(doc) : null;
  }

  async listUsers(): Promise<UserRecord[]> {
    const docs = await this.#users.find({}).sort({ name: 1 }).toArray();
    return this.#base.unreadable.parseEach('user', userDoc, docs);
  }

  async addToken(given: NewToken): Promise<void> {
    const token = newTokenRecord(given, new Date());
    try {
      await this.#tokens.insertOne({
        ...token,
        userId: new ObjectId(token.userId),
        orgId: new ObjectId(token.orgId),
      });
    } catch (error) {
      throw duplicateOr(error, `token prefix ${token.prefix} exists`);
    }
  }

  async findToken(prefix: string): Promise<TokenRecord | null> {
    const doc = await this.#tokens.findOne({ prefix });
    return doc ? tokenDoc.parse(doc) : null;
  }

  async listTokens(userId: string): Promise<TokenRecord[]> {
    const docs = await this.#tokens
      .find({ userId: new ObjectId(userId) })
      .sort({ createdAt: 1, prefix: 1 })
      .toArray();
    return this.#base.unreadable.parseEach('token', tokenDoc, docs);
  }

  async listOrganisationTokens(orgId: string): Promise<TokenRecord[]> {
    const id = new ObjectId(orgId);
    // Tokens made before organisations have no orgId: theirs is their user's own (the same id).
    const docs = await this.#tokens
      .find({ $or: [{ orgId: id }, { orgId: { $exists: false }, userId: id }] })
      .sort({ createdAt: 1, prefix: 1 })
      .toArray();
    return this.#base.unreadable.parseEach('token', tokenDoc, docs);
  }

  async revokeToken(prefix: string): Promise<boolean> {
    const result = await this.#tokens.updateOne({ prefix, revokedAt: null }, { $set: { revokedAt: new Date() } });
    return result.modifiedCount === 1;
  }
}

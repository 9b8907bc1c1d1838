import { ObjectId, type Collection, type Db } from 'mongodb';
import { duplicateOr, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import { ssoRecords, type IdentityRecord, type SessionRecord, type SsoStore } from './sso-store.ts';

const records = ssoRecords(mongoForms);

export const ssoIndexes = (db: Db) => [
  db.collection('ssoSessions').createIndex({ digest: 1 }, { unique: true }),
  db.collection('ssoSessions').createIndex({ expiresAt: 1 }),
  db.collection('ssoIdentities').createIndex({ issuer: 1, subject: 1 }, { unique: true }),
  db.collection('ssoIdentities').createIndex({ issuer: 1, userId: 1 }, { unique: true }),
];

/** SSO sessions and identities in MongoDB: the `ssoSessions` and `ssoIdentities` collections. */
export class MongoSso implements SsoStore {
  readonly #sessions: Collection;
  readonly #identities: Collection;

  constructor(base: MongoDatabase) {
    this.#sessions = base.db.collection('ssoSessions');
    this.#identities = base.db.collection('ssoIdentities');
  }

  async addSession(session: SessionRecord): Promise<void> {
    await this.#sessions.insertOne({
      ...session,
      userId: new ObjectId(session.userId),
      orgId: new ObjectId(session.orgId),
    });
  }

  async findSession(digest: string): Promise<SessionRecord | null> {
    const doc = await this.#sessions.findOne({ digest }, { projection: { _id: 0 } });
    return doc ? records.session.parse(doc) : null;
  }

  async setSessionOrganisation(digest: string, orgId: string): Promise<boolean> {
    const result = await this.#sessions.updateOne({ digest }, { $set: { orgId: new ObjectId(orgId) } });
    return result.matchedCount === 1;
  }

  async removeSession(digest: string): Promise<boolean> {
    return (await this.#sessions.deleteOne({ digest })).deletedCount === 1;
  }

  async removeExpiredSessions(now: Date): Promise<number> {
    return (await this.#sessions.deleteMany({ expiresAt: { $lt: now } })).deletedCount;
  }

  async findIdentity(issuer: string, subject: string): Promise<IdentityRecord | null> {
    const doc = await this.#identities.findOne({ issuer, subject }, { projection: { _id: 0 } });
    return doc ? records.identity.parse(doc) : null;
  }

  async findUserIdentity(issuer: string, userId: string): Promise<IdentityRecord | null> {
    const doc = await this.#identities.findOne({ issuer, userId: new ObjectId(userId) }, { projection: { _id: 0 } });
    return doc ? records.identity.parse(doc) : null;
  }

  async addIdentity(identity: IdentityRecord): Promise<void> {
    try {
      await this.#identities.insertOne({ ...identity, userId: new ObjectId(identity.userId) });
    } catch (error) {
      throw duplicateOr(error, `the identity ${identity.subject} at ${identity.issuer} or its user is linked already`);
    }
  }
}

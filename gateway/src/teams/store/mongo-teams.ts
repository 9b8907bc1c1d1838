import { ObjectId, type Collection, type Db, type Document, type Filter, type UpdateFilter } from 'mongodb';
import { asRecord, duplicateOr, isDuplicateKey, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import { DuplicateError } from '../../store/store.ts';
import {
  teamRecords,
  type MembershipRecord,
  type NewMembership,
  type OrganisationRecord,
  type TeamsStore,
} from './teams-store.ts';

const records = teamRecords(mongoForms);
const organisationDoc = asRecord(records.organisation);
const membershipDoc = records.membership;

export const teamIndexes = (db: Db) => {
  const memberships = db.collection('memberships');
  return [
    db.collection('organisations').createIndex({ name: 1 }, { unique: true }),
    memberships.createIndex({ orgId: 1, userId: 1 }, { unique: true }),
    memberships.createIndex({ userId: 1, createdAt: 1 }),
  ];
};

/** The ObjectId an id stands for; null for text that is no id (no record has it). */
const objectIdOf = (id: string): ObjectId | null => (/^[0-9a-f]{24}$/i.test(id) ? new ObjectId(id) : null);

/**
 * An update that inserts the document where there is none. Two at once may both insert, and
 * the unique index refuse the second (E11000): its document is there now, so it updates that.
 */
async function upsert(collection: Collection, filter: Filter<Document>, update: UpdateFilter<Document>) {
  try {
    await collection.updateOne(filter, update, { upsert: true });
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    await collection.updateOne(filter, update);
  }
}

/** A user whose organisation of their own is the one made with them. */
interface OwnedBy {
  _id: ObjectId;
  name: string;
  createdAt: Date;
}

/**
 * A user's own organisation (the user's id and name) with the user as its admin. The
 * membership first: a process that stops between the two leaves a user without an
 * organisation, which the next start mends (giveOwnOrganisations); the organisation made
 * meanwhile by another gateway is as good as this one's. DuplicateError: another organisation
 * has the name (the membership is taken back).
 */
export async function insertOwnOrganisation(db: Db, user: OwnedBy): Promise<void> {
  const membership = { orgId: user._id, userId: user._id };
  const memberships = db.collection('memberships');
  const organisations = db.collection('organisations');
  await upsert(memberships, membership, {
    $setOnInsert: { role: 'admin', source: 'manual', createdAt: user.createdAt },
  });
  try {
    await organisations.insertOne({ _id: user._id, name: user.name, createdAt: user.createdAt });
  } catch (error) {
    if (isDuplicateKey(error) && (await organisations.countDocuments({ _id: user._id })) === 1) return;
    if (isDuplicateKey(error)) await memberships.deleteOne(membership);
    throw duplicateOr(error, `an organisation is named ${JSON.stringify(user.name)}`);
  }
}

/**
 * Run at every start, after the indexes: each user lacking an organisation of their own gains
 * one with the user as its admin, unless made without one (single sign-on's users,
 * `ownOrganisation: false`) or its name is another organisation's (left alone, as SQLite
 * leaves it). Two gateways starting at once both try: the second's duplicate keys are ignored.
 */
export async function giveOwnOrganisations(db: Db): Promise<number> {
  const users = await db
    .collection<OwnedBy>('users')
    .find({ ownOrganisation: { $ne: false } }, { projection: { _id: 1, name: 1, createdAt: 1 } })
    .toArray();
  const organisations = await db
    .collection('organisations')
    .find({}, { projection: { _id: 1, name: 1 } })
    .toArray();
  const ids = new Set(organisations.map((o) => String(o._id)));
  const names = new Set(organisations.map((o) => o['name'] as unknown));
  let given = 0;
  for (const user of users) {
    if (ids.has(String(user._id)) || names.has(user.name)) continue;
    try {
      await insertOwnOrganisation(db, user);
      given += 1;
    } catch (error) {
      // Its name was taken since the list was read: left alone, as any other taken name.
      if (!(error instanceof DuplicateError)) throw error;
    }
  }
  return given;
}

/** Organisations and memberships in MongoDB: the `organisations` and `memberships` collections. */
export class MongoTeams implements TeamsStore {
  readonly #base: MongoDatabase;
  readonly #organisations: Collection;
  readonly #memberships: Collection;
  readonly #tokens: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#organisations = base.db.collection('organisations');
    this.#memberships = base.db.collection('memberships');
    this.#tokens = base.db.collection('tokens');
  }

  async createOrganisation({ name, id }: { name: string; id?: string }): Promise<OrganisationRecord> {
    const doc = { _id: id === undefined ? new ObjectId() : new ObjectId(id), name, createdAt: new Date() };
    try {
      await this.#organisations.insertOne(doc);
    } catch (error) {
      throw duplicateOr(error, `organisation ${JSON.stringify(name)} exists`);
    }
    return organisationDoc.parse(doc);
  }

  async findOrganisation(id: string): Promise<OrganisationRecord | null> {
    const _id = objectIdOf(id);
    const doc = _id && (await this.#organisations.findOne({ _id }));
    return doc ? organisationDoc.parse(doc) : null;
  }

  async findOrganisationByName(name: string): Promise<OrganisationRecord | null> {
    const doc = await this.#organisations.findOne({ name });
    return doc ? organisationDoc.parse(doc) : null;
  }

  async listOrganisations(): Promise<OrganisationRecord[]> {
    const docs = await this.#organisations.find({}).sort({ name: 1 }).toArray();
    return this.#base.unreadable.parseEach('organisation', organisationDoc, docs);
  }

  async setMembership({ orgId, userId, role, source }: NewMembership): Promise<void> {
    await upsert(
      this.#memberships,
      { orgId: new ObjectId(orgId), userId: new ObjectId(userId) },
      { $set: { role, source }, $setOnInsert: { createdAt: new Date() } },
    );
  }

  async findMembership(orgId: string, userId: string): Promise<MembershipRecord | null> {
    const [org, user] = [objectIdOf(orgId), objectIdOf(userId)];
    const doc = org && user && (await this.#memberships.findOne({ orgId: org, userId: user }));
    return doc ? membershipDoc.parse(doc) : null;
  }

  async listMembers(orgId: string): Promise<MembershipRecord[]> {
    const org = objectIdOf(orgId);
    if (!org) return [];
    const docs = await this.#memberships.find({ orgId: org }).sort({ createdAt: 1, userId: 1 }).toArray();
    return this.#base.unreadable.parseEach('membership', membershipDoc, docs);
  }

  async listMemberships(userId: string): Promise<MembershipRecord[]> {
    const user = objectIdOf(userId);
    if (!user) return [];
    const docs = await this.#memberships.find({ userId: user }).sort({ createdAt: 1, orgId: 1 }).toArray();
    return this.#base.unreadable.parseEach('membership', membershipDoc, docs);
  }

  async removeMembership(orgId: string, userId: string): Promise<boolean> {
    const [org, user] = [objectIdOf(orgId), objectIdOf(userId)];
    if (!org || !user) return false;
    if ((await this.#memberships.deleteOne({ orgId: org, userId: user })).deletedCount !== 1) return false;
    // Tokens made before organisations have no orgId: theirs is their user's own.
    const inOrganisation = org.equals(user) ? { $or: [{ orgId: org }, { orgId: { $exists: false } }] } : { orgId: org };
    await this.#tokens.updateMany(
      { userId: user, revokedAt: null, ...inOrganisation },
      { $set: { revokedAt: new Date() } },
    );
    return true;
  }
}

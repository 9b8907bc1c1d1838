import { ObjectId, type Collection, type Db, type Filter } from 'mongodb';
import { asRecord, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  auditLogRecords,
  auditPageSize,
  type AuditEntryRecord,
  type AuditLogStore,
  type AuditPage,
  type NewAuditEntry,
} from './audit-log-store.ts';

const entryDoc = asRecord(auditLogRecords(mongoForms).entry);

export const auditLogIndexes = (db: Db) => [
  db.collection('auditLog').createIndex({ orgId: 1, at: -1, _id: -1 }),
  db.collection('auditLog').createIndex({ orgId: 1, action: 1, at: -1, _id: -1 }),
];

/** The audit log in MongoDB: the `auditLog` collection, documents only ever inserted. */
export class MongoAuditLog implements AuditLogStore {
  readonly #base: MongoDatabase;
  readonly #entries: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#entries = base.db.collection('auditLog');
  }

  async appendAuditEntry(entry: NewAuditEntry): Promise<AuditEntryRecord> {
    const doc = { _id: new ObjectId(), ...entry, orgId: new ObjectId(entry.orgId) };
    await this.#entries.insertOne(doc);
    return entryDoc.parse(doc);
  }

  async listAuditEntries(orgId: string, page: AuditPage): Promise<AuditEntryRecord[]> {
    const filter: Filter<Record<string, unknown>> = { orgId: new ObjectId(orgId) };
    if (page.action) filter['action'] = page.action;
    if (page.before) {
      const { at, id } = page.before;
      filter['$or'] = [{ at: { $lt: at } }, { at, _id: { $lt: new ObjectId(id) } }];
    }
    const docs = await this.#entries.find(filter).sort({ at: -1, _id: -1 }).limit(auditPageSize(page.limit)).toArray();
    return this.#base.unreadable.parseEach('audit entry', entryDoc, docs);
  }
}

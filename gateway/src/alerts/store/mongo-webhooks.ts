import { ObjectId, type Collection, type Db } from 'mongodb';
import { asRecord, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
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

const records = webhookRecords(mongoForms);
const webhookDoc = asRecord(records.webhook);
const deliveryDoc = asRecord(records.delivery);

/** What the deliveries collection holds; read back through deliveryDoc. */
interface DeliveryDocument extends Omit<DeliveryRecord, 'id' | 'webhookId' | 'userId'> {
  // Keyed by the delivery id derived from its event, so announcing an event twice stores it once.
  _id: string;
  webhookId: ObjectId;
  userId: ObjectId;
}

export const webhookIndexes = (db: Db) => {
  const deliveries = db.collection('deliveries');
  return [
    db.collection('webhooks').createIndex({ userId: 1, createdAt: 1 }),
    // The sender's due deliveries, and a webhook's newest.
    deliveries.createIndex({ status: 1, nextAttemptAt: 1 }),
    deliveries.createIndex({ webhookId: 1, createdAt: -1 }),
    // Finished deliveries are pruned by age.
    deliveries.createIndex({ createdAt: 1 }),
  ];
};

/** Webhooks and their outbox in MongoDB: the `webhooks` and `deliveries` collections. */
export class MongoWebhooks implements WebhooksStore {
  readonly #base: MongoDatabase;
  readonly #webhooks: Collection;
  readonly #deliveries: Collection<DeliveryDocument>;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#webhooks = base.db.collection('webhooks');
    this.#deliveries = base.db.collection<DeliveryDocument>('deliveries');
  }

  async addWebhook(webhook: NewWebhook, maxPerUser = Infinity): Promise<WebhookRecord> {
    const doc = { _id: new ObjectId(), ...webhook, userId: new ObjectId(webhook.userId), createdAt: new Date() };
    await this.#webhooks.insertOne(doc);
    // Counted after the insert, so two adds at once both see each other (no transaction needed
    // on any MongoDB-wire server): past the limit, this one is taken back.
    if (Number.isFinite(maxPerUser) && (await this.#webhooks.countDocuments({ userId: doc.userId })) > maxPerUser) {
      await this.#webhooks.deleteOne({ _id: doc._id });
      await this.#deliveries.deleteMany({ webhookId: doc._id });
      throw new WebhookLimitReached(maxPerUser);
    }
    return webhookDoc.parse(doc);
  }

  async findWebhook(id: string): Promise<WebhookRecord | null> {
    if (!ObjectId.isValid(id)) return null;
    const doc = await this.#webhooks.findOne({ _id: new ObjectId(id) });
    return doc ? webhookDoc.parse(doc) : null;
  }

  async setWebhookSecret(id: string, secret: string): Promise<void> {
    await this.#webhooks.updateOne({ _id: new ObjectId(id) }, { $set: { secret } });
  }

  async listWebhooks(userId: string): Promise<WebhookRecord[]> {
    const docs = await this.#webhooks
      .find({ userId: new ObjectId(userId) })
      .sort({ createdAt: 1, _id: 1 })
      .toArray();
    return this.#base.unreadable.parseEach('webhook', webhookDoc, docs);
  }

  async removeWebhook(userId: string, id: string): Promise<boolean> {
    if (!ObjectId.isValid(id)) return false;
    const removed = await this.#webhooks.deleteOne({ _id: new ObjectId(id), userId: new ObjectId(userId) });
    if (removed.deletedCount === 0) return false;
    await this.#deliveries.deleteMany({ webhookId: new ObjectId(id) });
    return true;
  }

  async enqueueDeliveries(deliveries: readonly NewDelivery[]): Promise<void> {
    // An upsert that only ever inserts: a delivery already in the outbox keeps its state.
    for (const d of deliveries) {
      const fields = { webhookId: new ObjectId(d.webhookId), userId: new ObjectId(d.userId), ...queuedDelivery(d) };
      await this.#deliveries.updateOne({ _id: d.id }, { $setOnInsert: fields }, { upsert: true });
    }
  }

  async claimDeliveries(
    now: Date,
    limit: number,
    leaseMs: number,
    exceptUsers: readonly string[] = [],
  ): Promise<DeliveryRecord[]> {
    // One at a time with findOneAndUpdate: each claim is atomic on any MongoDB-wire server, so
    // two gateways never take the same delivery in the same lease.
    const claimed: DeliveryRecord[] = [];
    const others = exceptUsers.length > 0 ? { userId: { $nin: exceptUsers.map((id) => new ObjectId(id)) } } : {};
    while (claimed.length < limit) {
      const doc = await this.#deliveries.findOneAndUpdate(
        { status: 'pending', nextAttemptAt: { $lte: now }, ...others },
        { $set: { nextAttemptAt: new Date(now.getTime() + leaseMs) } },
        { sort: { nextAttemptAt: 1 }, returnDocument: 'after' },
      );
      if (!doc) break;
      claimed.push(deliveryDoc.parse(doc));
    }
    return claimed;
  }

  async recordDeliveryAttempt(id: string, attempt: DeliveryAttempt): Promise<void> {
    await this.#deliveries.updateOne({ _id: id }, { $set: attemptChanges(attempt), $inc: { attempts: 1 } });
  }

  async listDeliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    const docs = await this.#deliveries
      .find({ webhookId: new ObjectId(webhookId) })
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit)
      .toArray();
    return this.#base.unreadable.parseEach('delivery', deliveryDoc, docs);
  }

  async deleteDeliveriesBefore(before: Date): Promise<number> {
    const { deletedCount } = await this.#deliveries.deleteMany({
      status: { $ne: 'pending' },
      createdAt: { $lt: before },
    });
    return deletedCount;
  }
}

import { ObjectId, type Collection, type Db } from 'mongodb';
import { z } from 'zod';
import type { Device, KpiRecord } from '@perfwatch/common';
import { asRecord, mongoForms, objectId, type MongoDatabase } from '../../store/mongo-database.ts';
import type { ProjectRecord } from '../../projects/store/projects-store.ts';
import { commitRange, revisionMember } from '../../store/stored-revision.ts';
import {
  fieldHistoryId,
  fieldHistoryKpis,
  KPI_BATCH,
  kpiBatches,
  kpiRecords,
  placedKpis,
  type KpiReplacement,
  type KpiRow,
  type KpisStore,
  type OverviewFilter,
  type PlacedKpi,
} from './kpis-store.ts';
import { snapshotRecords } from './snapshots-store.ts';

/** The fields of a KPI document the overview reads, and the order it reads them in (its index's). */
export const KPI_PROJECTION = {
  _id: 0,
  date: 1,
  domain: 1,
  url: 1,
  device: 1,
  location: 1,
  updateType: 1,
  section: 1,
  kpi: 1,
  step: 1,
  revision: 1,
  data: 1,
} as const;
/**
 * The overview's order; a flow's steps' records of one KPI in the flow's order (`stepIndex`,
 * absent from records of projects without a flow, which have no such ties).
 */
export const KPI_ORDER = { date: 1, url: 1, device: 1, location: 1, section: 1, kpi: 1, stepIndex: 1 } as const;

const kpiDoc = kpiRecords(mongoForms).kpi.extend({ data: z.union([z.record(z.string(), z.unknown()), z.string()]) });
const snapshotDoc = asRecord(snapshotRecords(mongoForms).snapshot);
/** What a snapshot document holds besides its record: its user and domain, for its KPI records' place. */
const snapshotOwnerDoc = z.object({ userId: objectId, domain: z.string() });

export const kpiIndexes = (db: Db) => {
  const kpis = db.collection('kpis');
  return [
    // /v1/overview reads a user's KPI records by date range, in KPI_ORDER (a store made before flows keeps
    // its index of the keys before `stepIndex` too, unused).
    kpis.createIndex({ userId: 1, ...KPI_ORDER }),
    kpis.createIndex({ snapshotId: 1 }),
  ];
};

/**
 * KPI documents of `kpis`, all hanging on `snapshotId` (a snapshot's ObjectId, or the string of
 * a field-data history); `pending` ones are hidden from the overview until their snapshot is complete.
 */
export const kpiDocs = (kpis: readonly PlacedKpi[], snapshotId: ObjectId | string, pending: boolean) =>
  kpis.map((k) => ({
    ...k,
    snapshotId,
    projectId: new ObjectId(k.projectId),
    userId: new ObjectId(k.userId),
    ...(pending ? { pending: true } : {}),
  }));

/** KPI records in MongoDB: the `kpis` collection, and the version on each `snapshots` document. */
export class MongoKpis implements KpisStore {
  readonly #kpis: Collection;
  readonly #snapshots: Collection;

  constructor({ db }: MongoDatabase) {
    this.#kpis = db.collection('kpis');
    this.#snapshots = db.collection('snapshots');
  }

  async listSnapshotsBelowKpiVersion(
    version: number,
    limit: number,
  ): Promise<Array<{ projectId: string; date: Date }>> {
    // Snapshots stored before versions were have none: the seed's, 1.
    const below =
      version > 1
        ? { $or: [{ kpiVersion: { $lt: version } }, { kpiVersion: { $exists: false } }] }
        : { kpiVersion: { $lt: version } };
    const docs = await this.#snapshots
      .find({ status: 'complete', ...below }, { projection: { projectId: 1, date: 1 } })
      .sort({ date: 1 })
      .limit(limit)
      .toArray();
    return docs.map((doc) => ({ projectId: String(doc['projectId']), date: z.date().parse(doc['date']) }));
  }

  async replaceSnapshotKpis(
    { projectId, date }: { projectId: string; date: Date },
    { sections, results, version }: KpiReplacement,
  ): Promise<void> {
    const raw = await this.#snapshots.findOne({ projectId: new ObjectId(projectId), date, status: 'complete' });
    if (!raw) return;
    const snapshot = snapshotDoc.parse(raw);
    const snapshotId = raw._id as ObjectId;
    const inSections = { snapshotId, section: { $in: [...sections] } };
    // No transactions: the new records go in pending (hidden from the overview), the old ones
    // out, then the new ones are shown and the version recorded. Cut short anywhere, a second
    // run starts by clearing what the first left pending, and does it all again.
    await this.#kpis.deleteMany({ ...inSections, pending: true });
    const { userId, domain } = snapshotOwnerDoc.parse(raw);
    const { url, updateType } = snapshot;
    const place = {
      snapshotId: snapshot.id,
      projectId,
      userId,
      date: snapshot.date,
      domain,
      url,
      updateType,
      ...revisionMember(snapshot.revision),
    };
    const docs = kpiDocs(placedKpis(place, results), snapshotId, true);
    if (docs.length > 0) await this.#kpis.insertMany(docs, { ordered: false });
    await this.#kpis.deleteMany({ ...inSections, pending: { $ne: true } });
    await this.#kpis.updateMany({ snapshotId, pending: true }, { $unset: { pending: '' } });
    await this.#snapshots.updateOne({ _id: snapshotId }, { $set: { kpiVersion: version } });
  }

  async saveFieldHistory(
    project: ProjectRecord,
    rows: ReadonlyArray<{ date: Date; device: Device; kpis: readonly KpiRecord[] }>,
  ): Promise<void> {
    const snapshotId = fieldHistoryId(project.id);
    await this.#kpis.deleteMany({ snapshotId });
    const kpis = fieldHistoryKpis(project, rows);
    if (kpis.length > 0) await this.#kpis.insertMany(kpiDocs(kpis, snapshotId, false), { ordered: false });
  }

  async *streamKpis(filter: OverviewFilter): AsyncIterable<readonly KpiRow[]> {
    const { userId, from, to, domain, updateType, sections, commit, branch, pullRequest } = filter;
    // Records still pending belong to a snapshot being written, or to one that never completed.
    const query: Record<string, unknown> = {
      userId: new ObjectId(userId),
      date: { $gte: from, $lt: to },
      pending: { $ne: true },
    };
    if (domain) query['domain'] = domain;
    if (updateType) query['updateType'] = updateType;
    if (sections && sections.length > 0) query['section'] = { $in: sections };
    if (commit) query['revision.commit'] = { $gte: commitRange(commit).from, $lt: commitRange(commit).to };
    if (branch) query['revision.branch'] = branch;
    if (pullRequest) query['revision.pullRequest'] = pullRequest;
    const cursor = this.#kpis.find(query, { projection: KPI_PROJECTION }).sort(KPI_ORDER).batchSize(KPI_BATCH);
    try {
      // What the driver already holds goes out in one batch; the next read may wait on the server.
      yield* kpiBatches(
        cursor,
        (doc) => {
          const { data, ...row } = kpiDoc.parse(doc);
          return { ...row, dataJson: JSON.stringify(data) };
        },
        () => cursor.bufferedCount() === 0,
      );
    } finally {
      await cursor.close();
    }
  }
}

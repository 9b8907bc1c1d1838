import { Binary, ObjectId, type Collection } from 'mongodb';
import { z } from 'zod';
import { FLOW_LIMITS } from '@perfwatch/common';
import { asRecord, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  cellReadLater,
  snapshotRecords,
  storedCell,
  type SnapshotCells,
  type SnapshotFilter,
  type SnapshotPage,
  type SnapshotReadsStore,
  type SnapshotRecord,
  type SnapshotSummary,
} from './snapshots-store.ts';

const records = snapshotRecords(mongoForms);
const snapshotDoc = asRecord(records.snapshot);
const summaryDoc = records.snapshot.pick({ date: true, updateType: true, available: true, revision: true });
const resultDoc = records.result.extend({ lighthouse: z.instanceof(Binary) });
const stepResultsDoc = z.array(z.instanceof(Binary)).max(FLOW_LIMITS.steps);

/** The query of a snapshot's results, as a read filters them. */
function resultsOf(snapshotId: unknown, filter: SnapshotFilter): Record<string, unknown> {
  const query: Record<string, unknown> = { snapshotId };
  if (filter.device) query['device'] = filter.device;
  if (filter.locations && filter.locations.length > 0) query['location'] = { $in: filter.locations };
  return query;
}

/** Complete snapshots read from MongoDB: `snapshots`, their cells' results in `results`. */
export class MongoSnapshotReads implements SnapshotReadsStore {
  readonly #base: MongoDatabase;
  readonly #snapshots: Collection;
  readonly #results: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#snapshots = base.db.collection('snapshots');
    this.#results = base.db.collection('results');
  }

  async findSnapshot(projectId: string, date: Date, filter: SnapshotFilter = {}): Promise<SnapshotRecord | null> {
    const raw = await this.#snapshots.findOne({ projectId: new ObjectId(projectId), date, status: 'complete' });
    if (!raw) return null;
    // Not a flow's further step results: a whole read has no use for them (findSnapshotCells reads them).
    const docs = await this.#results.find(resultsOf(raw._id, filter), { projection: { stepResults: 0 } }).toArray();
    const results = docs.map((doc) => {
      const { lighthouse, ...r } = resultDoc.parse(doc);
      return storedCell(r, lighthouse.buffer);
    });
    return { ...snapshotDoc.parse(raw), results };
  }

  async findSnapshotCells(projectId: string, date: Date, filter: SnapshotFilter = {}): Promise<SnapshotCells | null> {
    const raw = await this.#snapshots.findOne({ projectId: new ObjectId(projectId), date, status: 'complete' });
    if (!raw) return null;
    const docs = await this.#results
      .find(resultsOf(raw._id, filter), { projection: { lighthouse: 0, stepResults: 0 } })
      .toArray();
    const results = docs.map((doc) =>
      cellReadLater(
        records.result.parse(doc),
        async () => {
          const stored = await this.#results.findOne({ _id: doc._id }, { projection: { lighthouse: 1 } });
          // Deleted since (retention, a removed project): the reader's answer cannot be whole.
          if (!stored) throw new Error('the result is no longer stored');
          return resultDoc.shape.lighthouse.parse(stored['lighthouse']).buffer;
        },
        async () => {
          const stored = await this.#results.findOne({ _id: doc._id }, { projection: { stepResults: 1 } });
          if (!stored) throw new Error('the result is no longer stored');
          return stepResultsDoc.parse(stored['stepResults'] ?? []).map((binary) => binary.buffer);
        },
      ),
    );
    return { ...snapshotDoc.parse(raw), results };
  }

  async listSnapshots(projectId: string, page?: SnapshotPage): Promise<SnapshotSummary[]> {
    const filter = {
      projectId: new ObjectId(projectId),
      status: 'complete',
      ...(page?.before ? { date: { $lt: page.before } } : {}),
    };
    const found = this.#snapshots.find(filter, {
      projection: { date: 1, updateType: 1, available: 1, _id: 1, projectId: 1, updateId: 1, url: 1, revision: 1 },
    });
    const docs = page
      ? (await found.sort({ date: -1 }).limit(page.limit).toArray()).reverse()
      : await found.sort({ date: 1 }).toArray();
    return this.#base.unreadable.parseEach('snapshot', summaryDoc, docs);
  }
}

import { ObjectId, type Collection, type Db } from 'mongodb';
import { asRecord, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  annotationRecords,
  type AnnotationRecord,
  type AnnotationsStore,
  type NewAnnotation,
} from './annotations-store.ts';

const annotationDoc = asRecord(annotationRecords(mongoForms).annotation);

export const annotationIndexes = (db: Db) => [db.collection('annotations').createIndex({ projectId: 1, date: 1 })];

/** Annotations in MongoDB: the `annotations` collection. */
export class MongoAnnotations implements AnnotationsStore {
  readonly #base: MongoDatabase;
  readonly #annotations: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#annotations = base.db.collection('annotations');
  }

  async addAnnotation(annotation: NewAnnotation): Promise<AnnotationRecord> {
    const doc = {
      _id: new ObjectId(),
      ...annotation,
      projectId: new ObjectId(annotation.projectId),
      createdAt: new Date(),
    };
    await this.#annotations.insertOne(doc);
    return annotationDoc.parse(doc);
  }

  async listAnnotations(
    projectId: string,
    range: { from?: Date; to?: Date; limit?: number } = {},
  ): Promise<AnnotationRecord[]> {
    const date: Record<string, Date> = {};
    if (range.from) date['$gte'] = range.from;
    if (range.to) date['$lt'] = range.to;
    const found = this.#annotations.find({
      projectId: new ObjectId(projectId),
      ...(range.from || range.to ? { date } : {}),
    });
    const docs =
      range.limit === undefined
        ? await found.sort({ date: 1, createdAt: 1 }).toArray()
        : (await found.sort({ date: -1, createdAt: -1 }).limit(range.limit).toArray()).reverse();
    return this.#base.unreadable.parseEach('annotation', annotationDoc, docs);
  }

  async countAnnotations(projectId: string): Promise<number> {
    return this.#annotations.countDocuments({ projectId: new ObjectId(projectId) });
  }

  async removeAnnotation(projectId: string, id: string): Promise<boolean> {
    if (!ObjectId.isValid(id)) return false;
    const { deletedCount } = await this.#annotations.deleteOne({
      _id: new ObjectId(id),
      projectId: new ObjectId(projectId),
    });
    return deletedCount === 1;
  }

  async deleteAnnotationsBefore(before: Date): Promise<number> {
    return (await this.#annotations.deleteMany({ date: { $lt: before } })).deletedCount;
  }
}

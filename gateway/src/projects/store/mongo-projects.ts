import { ObjectId, type Collection, type Db } from 'mongodb';
import { storedBudgets, type Budgets, type Flow } from '@perfwatch/common';
import { asRecord, duplicateOr, mongoForms, type MongoDatabase } from '../../store/mongo-database.ts';
import {
  newProjectRecord,
  projectRecords,
  type NewProject,
  type ProjectRecord,
  type ProjectSettings,
  type ProjectsStore,
} from './projects-store.ts';

/** A project document as its record (the scheduling slice reads the same documents). */
export const projectDoc = asRecord(projectRecords(mongoForms).project);

export const projectIndexes = (db: Db) => [
  db.collection('projects').createIndex({ userId: 1, url: 1 }, { unique: true }),
];

const byId = (projectId: string) => ({ _id: new ObjectId(projectId) });

/** Projects in MongoDB: the `projects` collection (a removal clears the project's data in the others). */
export class MongoProjects implements ProjectsStore {
  readonly #base: MongoDatabase;
  readonly #projects: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#projects = base.db.collection('projects');
  }

  async addProject(project: NewProject): Promise<ProjectRecord> {
    const { id, ...record } = newProjectRecord(project, new ObjectId().toHexString(), new Date());
    const siteId = record.siteId === null ? null : new ObjectId(record.siteId);
    const doc = {
      _id: new ObjectId(id),
      ...record,
      budgets: storedBudgets(record.budgets),
      userId: new ObjectId(project.userId),
      siteId,
    };
    try {
      await this.#projects.insertOne(doc);
    } catch (error) {
      throw duplicateOr(error, `project ${project.url} exists for this user`);
    }
    return projectDoc.parse(doc);
  }

  async findProject(userId: string, url: string): Promise<ProjectRecord | null> {
    const doc = await this.#projects.findOne({ userId: new ObjectId(userId), url });
    return doc ? projectDoc.parse(doc) : null;
  }

  async listProjects(userId?: string): Promise<ProjectRecord[]> {
    const docs = await this.#projects
      .find(userId ? { userId: new ObjectId(userId) } : {})
      .sort({ url: 1 })
      .toArray();
    return this.#base.unreadable.parseEach('project', projectDoc, docs);
  }

  async removeProject(userId: string, url: string): Promise<boolean> {
    const doc = await this.#projects.findOne({ userId: new ObjectId(userId), url });
    if (!doc) return false;
    // Data first, the project last: a removal cut short can simply be run again.
    for (const collection of ['kpis', 'results', 'snapshots', 'annotations'])
      await this.#base.db.collection(collection).deleteMany({ projectId: doc._id });
    // Its repository link (a sealed forge token) and its preview mark; events stay for the reporter.
    for (const collection of ['forge_links', 'forge_previews'])
      await this.#base.db.collection(collection).deleteOne({ _id: doc._id });
    await this.#projects.deleteOne({ _id: doc._id });
    return true;
  }

  async setProjectSettings(
    projectId: string,
    { locations, defaultLocation, runs, schedule, devices, crux }: ProjectSettings,
  ): Promise<void> {
    await this.#projects.updateOne(byId(projectId), {
      $set: { locations, defaultLocation, runs, schedule, devices, crux },
    });
  }

  async setProjectBudgets(projectId: string, budgets: Budgets): Promise<void> {
    await this.#projects.updateOne(byId(projectId), { $set: { budgets: storedBudgets(budgets) } });
  }

  async setProjectFlow(projectId: string, flow: Flow | null): Promise<void> {
    await this.#projects.updateOne(byId(projectId), { $set: { flow } });
  }

  async setProjectAuth(projectId: string, sealed: string | null): Promise<void> {
    await this.#projects.updateOne(byId(projectId), { $set: { auth: sealed } });
  }

  async replaceProjectAuth(projectId: string, expected: string, sealed: string): Promise<boolean> {
    const result = await this.#projects.updateOne({ ...byId(projectId), auth: expected }, { $set: { auth: sealed } });
    return result.matchedCount === 1;
  }
}

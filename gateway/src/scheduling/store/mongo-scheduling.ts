import { ObjectId, type Collection } from 'mongodb';
import { z } from 'zod';
import { isDuplicateKey, type MongoDatabase } from '../../store/mongo-database.ts';
import { projectDoc } from '../../projects/store/mongo-projects.ts';
import type { ProjectRecord } from '../../projects/store/projects-store.ts';
import type { SchedulingStore } from './scheduling-store.ts';

// A scheduler's mark that cannot be read is no mark: the project is simply due.
const scheduledProjectDoc = projectDoc.and(
  z.object({ scheduledThrough: z.date().nullable().catch(null).default(null) }),
);

/** The scheduler's lease (`leases`) and each project's last tick handled (on its `projects` document). */
export class MongoScheduling implements SchedulingStore {
  readonly #base: MongoDatabase;
  readonly #leases: Collection<{ _id: string; holder: string; expiresAt: Date }>;
  readonly #projects: Collection;

  constructor(base: MongoDatabase) {
    this.#base = base;
    this.#leases = base.db.collection<{ _id: string; holder: string; expiresAt: Date }>('leases');
    this.#projects = base.db.collection('projects');
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = new Date();
    try {
      // Matches a lease that is ours or has run out; otherwise the upsert's insert meets the
      // existing _id and fails: someone else holds it.
      await this.#leases.updateOne(
        { _id: name, $or: [{ holder }, { expiresAt: { $lt: now } }] },
        { $set: { holder, expiresAt: new Date(now.getTime() + ttlMs) } },
        { upsert: true },
      );
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async listScheduledProjects(): Promise<Array<ProjectRecord & { scheduledThrough: Date | null }>> {
    const docs = await this.#projects.find({ schedule: { $type: 'string' } }).toArray();
    return this.#base.unreadable.parseEach('project', scheduledProjectDoc, docs);
  }

  async markScheduled(projectId: string, tick: Date): Promise<void> {
    await this.#projects.updateOne(
      {
        _id: new ObjectId(projectId),
        $or: [
          { scheduledThrough: { $exists: false } },
          { scheduledThrough: null },
          { scheduledThrough: { $lt: tick } },
        ],
      },
      { $set: { scheduledThrough: tick } },
    );
  }
}

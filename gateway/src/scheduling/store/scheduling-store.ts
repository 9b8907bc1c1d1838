import type { ProjectRecord } from '../../projects/store/projects-store.ts';

/** What the scheduler keeps: one lease among the gateway replicas, and each project's last tick handled. */
export interface SchedulingStore {
  /**
   * Takes or renews the named lease for `holder` until now + ttlMs; false while another holder's
   * lease runs. One scheduler among the gateway replicas.
   */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** The latest schedule tick handled for each project with a schedule. */
  listScheduledProjects(): Promise<Array<ProjectRecord & { scheduledThrough: Date | null }>>;
  /** Records that `tick` was handled, unless another scheduler recorded a later one. */
  markScheduled(projectId: string, tick: Date): Promise<void>;
}

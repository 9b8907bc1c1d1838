import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { SnapshotReadsStore } from '../snapshots/store/snapshots-store.ts';
import type { ForgeStore } from './store/forge-store.ts';

export type PreviewRetentionStore = Pick<ForgeStore, 'listPreviewProjects'> &
  Pick<ProjectsStore, 'listProjects' | 'removeProject'> &
  Pick<SnapshotReadsStore, 'listSnapshots'>;

/**
 * Removes the preview projects the forge receiver made whose last snapshot (or, with none, whose
 * making) is older than `before`: one is made per preview URL, and with a host per commit or per
 * branch they would pile up in their user's projects for ever, though retention has taken their
 * snapshots. A project the user made before it became a preview is never one: the receiver marks
 * only those it makes. Returns how many were removed.
 */
export async function removeStalePreviews(store: PreviewRetentionStore, before: Date): Promise<number> {
  const previews = new Set(await store.listPreviewProjects());
  if (previews.size === 0) return 0;
  let removed = 0;
  for (const project of await store.listProjects()) {
    if (!previews.has(project.id) || project.createdAt >= before) continue;
    const [latest] = await store.listSnapshots(project.id, { limit: 1 });
    if (latest && latest.date >= before) continue;
    if (await store.removeProject(project.userId, project.url)) removed += 1;
  }
  return removed;
}

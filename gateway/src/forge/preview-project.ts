import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import { DuplicateError } from '../store/store.ts';
import type { ForgeStore } from './store/forge-store.ts';

/**
 * The project a preview is measured as: the user's project with the preview's URL, made when it
 * has none from the linked project's locations, runs, devices, CrUX opt-in and budgets, with no schedule (a preview is
 * measured when it deploys) and never its page credentials (they were given for the linked page,
 * not for whatever a pull request deploys), and marked the linked project's preview. A project of
 * the user that already has this URL is measured as it is, with its own settings.
 */
export async function previewProject(
  store: Pick<ProjectsStore, 'findProject' | 'addProject'> & Pick<ForgeStore, 'markPreviewProject'>,
  linked: ProjectRecord,
  url: string,
): Promise<ProjectRecord> {
  const found = await store.findProject(linked.userId, url);
  if (found) return found;
  let project: ProjectRecord;
  try {
    project = await store.addProject({
      userId: linked.userId,
      url,
      domain: new URL(url).hostname,
      locations: linked.locations,
      defaultLocation: linked.defaultLocation,
      runs: linked.runs,
      schedule: null,
      devices: linked.devices,
      crux: linked.crux,
      budgets: linked.budgets,
    });
  } catch (error) {
    // Two events of the same preview at once: the other made it.
    const made = error instanceof DuplicateError ? await store.findProject(linked.userId, url) : null;
    if (!made) throw error;
    return made;
  }
  await store.markPreviewProject(project.id, linked.id);
  return project;
}

import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, TargetRefused, type Forge, type ForgeEventAnswer, type TargetGuard } from '@perfwatch/common';
import { measuredDevices } from '../projects/project-settings.ts';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import { DuplicateError } from '../store/store.ts';
import type { StartAsync } from '../updates/async-updates.ts';
import type { PreviewEvent } from './forge-events.ts';
import { previewProject } from './preview-project.ts';
import { fillPreviewTemplate, previewPageUrl, previewValuesOf } from './preview-url.ts';
import type { ForgeLinkRecord, ForgeStore } from './store/forge-store.ts';

/** How long a redelivery waits for the first delivery of its event to have queued its update. */
const DUPLICATE_WAIT_MS = 5_000;

export interface PreviewDeps {
  store: Pick<ProjectsStore, 'findProject' | 'addProject'> &
    Pick<
      ForgeStore,
      'markPreviewProject' | 'addForgeEvent' | 'findForgeEvent' | 'setForgeEventUpdate' | 'removeForgeEvent'
    >;
  /** The address rules measured pages pass (PERFWATCH_ALLOW_TARGETS), checked before anything is queued. */
  targets: TargetGuard;
  /** mode=async's own start: the backlog, fair use and admission of /v1/update. */
  startAsync: StartAsync;
  now?: () => Date;
}

interface Linked {
  forge: Forge;
  link: ForgeLinkRecord;
  project: ProjectRecord;
}

/**
 * A verified preview event: its page checked, its project found or made, the event stored under
 * its key (a redelivery finds it and queues nothing), and one async `ci` update queued for it.
 */
export async function acceptPreview(
  deps: PreviewDeps,
  { forge, link, project }: Linked,
  event: PreviewEvent,
  requestId: string,
): Promise<ForgeEventAnswer> {
  const { store } = deps;
  // Per linked project: each project linked to the repository has its own webhook, so its own delivery.
  const key = `${event.key}@${project.id}`;
  const seen = await store.findForgeEvent(key);
  const now = deps.now?.() ?? new Date();
  if (seen && abandoned(seen, now)) await store.removeForgeEvent(key);
  else if (seen) return duplicate(deps, key);
  const page = previewPage(link, project, event);
  if ('ignored' in page) return page;
  await refuseUnreachable(deps.targets, page.url);
  const preview = await previewProject(store, project, page.url);
  try {
    await store.addForgeEvent({
      key,
      forge,
      linkProjectId: project.id,
      previewProjectId: preview.id,
      previewUrl: page.url,
      revision: event.revision,
      receivedAt: now,
    });
  } catch (error) {
    if (error instanceof DuplicateError) return duplicate(deps, key);
    throw error;
  }
  let id: string;
  try {
    id = await deps.startAsync({
      project: preview,
      devices: measuredDevices(preview),
      updateType: 'ci',
      requestId,
      revision: event.revision,
    });
  } catch (error) {
    // Nothing was queued: the forge's redelivery of this event must be able to try again.
    await store.removeForgeEvent(key);
    throw error;
  }
  await store.setForgeEventUpdate(key, id);
  return { ok: 1, id, previewUrl: page.url };
}

/**
 * An event stored and never given its update: the gateway that took it stopped (or lost its
 * database) between the two writes. Its forge's redelivery is then measured as a new event
 * rather than answered 503 for ever. Queueing takes milliseconds; a minute is far past it.
 */
const ABANDONED_AFTER_MS = 60_000;
const abandoned = (event: { updateId: string | null; receivedAt: Date }, now: Date) =>
  event.updateId === null && now.getTime() - event.receivedAt.getTime() > ABANDONED_AFTER_MS;

/** The page to measure: the event's URL (or the link's template) with the linked project's path and query. */
function previewPage(
  link: ForgeLinkRecord,
  project: ProjectRecord,
  event: PreviewEvent,
): { url: string } | { ok: 1; ignored: string } {
  let origin = event.origin;
  if (!origin && link.previewUrl) {
    const filled = fillPreviewTemplate(link.previewUrl, previewValuesOf(event.revision));
    if ('missing' in filled)
      return { ok: 1, ignored: `the link's previewUrl needs {${filled.missing}}, which this event does not give` };
    origin = filled.url;
  }
  if (!origin) return { ok: 1, ignored: 'the deployment names no URL, and the link has no previewUrl' };
  const url = previewPageUrl(origin, project.url);
  if (!url)
    throw new ApiError('UNPROCESSABLE_CONTENT', 'The preview cannot be measured.', [
      `preview URL ${origin}: not an absolute http(s) URL without credentials`,
    ]);
  return { url };
}

/** 422 for a preview the agents may not reach, before anything is stored or queued. */
async function refuseUnreachable(targets: TargetGuard, url: string): Promise<void> {
  try {
    await targets.resolve(new URL(url).hostname);
  } catch (error) {
    if (!(error instanceof TargetRefused)) throw error;
    throw new ApiError('UNPROCESSABLE_CONTENT', 'The preview cannot be measured.', [
      `preview URL ${url}: ${error.message}`,
    ]);
  }
}

/** A redelivery: the update its first delivery queued (waited for while that one is still queueing it). */
async function duplicate({ store }: PreviewDeps, key: string): Promise<ForgeEventAnswer> {
  const deadline = Date.now() + DUPLICATE_WAIT_MS;
  for (;;) {
    const event = await store.findForgeEvent(key);
    if (event?.updateId) return { ok: 1, duplicate: true, id: event.updateId };
    if (!event || Date.now() > deadline)
      throw new ApiError('SERVICE_UNAVAILABLE', 'This event is being handled: deliver it again later.', [
        `event ${key}: its first delivery has not queued its update yet`,
      ]);
    await sleep(50);
  }
}

import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, revisionOf } from '@perfwatch/common';
import { auditResultPieces } from '../snapshots/audit-view.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { UpdatesStore } from './store/updates-store.ts';
import { refuseUntrustedCredentials } from './update-credentials.ts';
import type { UpdateService } from './update-service.ts';
import type { CredentialTrust } from '../projects/credential-trust.ts';
import type { StartAsync } from './async-updates.ts';
import { callerProject } from '../accounts/caller-project.ts';
import { measuredDevices } from '../projects/project-settings.ts';
import { writeJsonPieces } from '../http/written.ts';
import type { ArtifactClock } from '../artifacts/artifact-states.ts';
import type { NewLocationSnapshot } from '../snapshots/store/snapshots-store.ts';

/** Sync updates one user may have in flight, over every gateway replica (a place in the store). */
export interface SyncUpdateLimit {
  perUser: number;
  /** A place whose gateway died is free again after this long: longer than any sync update. */
  ttlMs: number;
}

/**
 * `GET|POST /v1/update`: runs an update of one of the caller's projects. `stallMs`: a client
 * that reads nothing of its answer for this long is cut off.
 */
export function updateRoute({
  store,
  updates,
  startAsync,
  syncUpdates,
  credentialTrust,
  stallMs,
  clock,
}: {
  store: Pick<ProjectsStore, 'findProject'> & Pick<UpdatesStore, 'claimPlace' | 'releasePlace'>;
  updates: UpdateService;
  startAsync: StartAsync;
  credentialTrust: CredentialTrust;
  syncUpdates?: SyncUpdateLimit | undefined;
  stallMs: number;
  /** What cells' artifacts are reported against (ARTIFACT_RETENTION_DAYS); absent: not reported. */
  clock?: ArtifactClock | undefined;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.update);
    const project = await callerProject(store, req, params.url);
    // Refused before anything is queued: an async update would otherwise fail later, unseen.
    refuseUntrustedCredentials(credentialTrust, project);
    const revision = revisionOf(params);
    const request = {
      project,
      devices: params.device ? [params.device] : measuredDevices(project),
      updateType: params.updateType,
      requestId: req.requestId,
      revision,
    };
    if (params.mode === 'async') {
      res.json({ ok: 1, id: await startAsync(request) });
      return;
    }
    const place = syncUpdates
      ? await store.claimPlace('sync-update', project.userId, syncUpdates.perUser, syncUpdates.ttlMs)
      : undefined;
    if (place === null) {
      throw new ApiError(
        'TOO_MANY_REQUESTS',
        'You have as many sync updates running as one user may. Wait for one to finish, or use mode=async.',
        [`limit: ${syncUpdates!.perUser} sync updates in flight per user`],
        { headers: { 'Retry-After': '30' } },
      );
    }
    const outcome = await updates
      .run(request)
      .finally(() => (place ? store.releasePlace(place).catch(() => undefined) : undefined));
    // Written piece by piece, one cell's result inflated at a time: a thousand updates
    // answering at once do not each hold their megabytes of answer.
    const { date, results, missing } = outcome;
    const snapshot = { date, available: results, results, missing, revision };
    await writeJsonPieces(res, auditResultPieces(snapshot, project, newResultJson, {}, clock), stallMs);
  };
}

/** A new cell's result JSON, or a flow step's (the first step's is the cell's own). */
const newResultJson = (cell: NewLocationSnapshot, step?: number) =>
  (step ? cell.steps![step]!.lighthouse : cell.lighthouse).json();

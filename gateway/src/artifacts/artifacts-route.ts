import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { API_ENDPOINTS, ApiError, formatApiDateTime, type Device, type Location } from '@perfwatch/common';
import { callerProject } from '../accounts/caller-project.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import { whileConnected, type HeavyReads } from '../snapshots/heavy-reads.ts';
import { releaseResult } from '../snapshots/result-bytes.ts';
import type { SnapshotCells, SnapshotReadsStore, StoredCell } from '../snapshots/store/snapshots-store.ts';
import { sendArtifact } from './artifact-download.ts';
import type { ArtifactClock } from './artifact-states.ts';
import { filmstripOf } from './filmstrip.ts';
import type { ArtifactStore } from './store/artifact-store.ts';

/** What artifacts are read from: the store, and the retention they are judged by. */
export interface ArtifactReads {
  store: Pick<ArtifactStore, 'get'>;
  clock: ArtifactClock;
}

/** What the gateway reads artifacts with: its store, judged by ARTIFACT_RETENTION_DAYS against `now`. */
export const artifactReadsOf = (
  store: ArtifactStore,
  retentionDays: number,
  now = () => new Date(),
): ArtifactReads => ({
  store,
  clock: { retentionDays, now },
});

type RouteStore = Pick<ProjectsStore, 'findProject'> & Pick<SnapshotReadsStore, 'findSnapshotCells'>;

/** Which cell an answer is of: the project's URL, the snapshot's date, the device and location. */
interface CellName {
  url: string;
  date: string;
  device: Device;
  location: Location;
}

/**
 * `GET|POST /v1/artifacts`: one cell's heavy evidence. Its requests and trace are streamed from
 * the artifact store (artifact-download.ts); its filmstrip is read from the stored result, in
 * one of the places for heavy reads, as /v1/audit reads results. Tenancy as /v1/audit: another
 * organisation's project, or one a ci token does not list, is a project not found.
 */
export function artifactsRoute({
  store,
  reads,
  artifacts,
  logger,
}: {
  store: RouteStore;
  reads: HeavyReads;
  /** Absent: this gateway keeps no artifacts (tests of the HTTP layer alone). */
  artifacts: ArtifactReads | undefined;
  logger: Logger;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.artifacts);
    const project = await callerProject(store, req, params.url);
    const location = params.location ?? project.defaultLocation;
    const { snapshot, cell } = await snapshotCell(store, project, params.date, params.device, location);
    const name: CellName = {
      url: project.url,
      date: formatApiDateTime(snapshot.date),
      device: params.device,
      location,
    };
    const { kind } = params;
    if (kind === 'filmstrip') {
      const frames = await withResult(cell, reads, res, filmstripOf);
      if (!frames) throw noResultPart('filmstrip', 'its stored Lighthouse result has no screenshot-thumbnails');
      res.json({ ...name, frames });
      return;
    }
    if (!artifacts) throw new ApiError('NOT_FOUND', 'The artifact was not kept.', ['kind: this gateway keeps none']);
    const key = {
      orgId: project.userId,
      projectId: project.id,
      snapshotId: snapshot.updateId,
      device: params.device,
      location,
      kind,
    };
    await sendArtifact(
      req,
      res,
      { ...artifacts, logger },
      {
        key,
        artifacts: cell.artifacts,
        snapshotDate: snapshot.date,
        ...(kind === 'trace' ? { filename: traceFileName(name) } : {}),
      },
    );
  };
}

/** The snapshot at that second and its cell of that device and location; 404s as /v1/audit's. */
async function snapshotCell(
  store: RouteStore,
  project: ProjectRecord,
  date: Date,
  device: Device,
  location: Location,
): Promise<{ snapshot: SnapshotCells; cell: StoredCell }> {
  const snapshot = await store.findSnapshotCells(project.id, date, { device, locations: [location] });
  if (!snapshot)
    throw new ApiError('NOT_FOUND', 'No snapshot at that date.', [
      `date: the project has no snapshot at ${formatApiDateTime(date)}`,
    ]);
  const cell = snapshot.results.find((r) => r.device === device && r.location === location);
  if (!cell)
    throw new ApiError('NOT_FOUND', 'The snapshot has no result for that device and location.', [
      `device, location: the snapshot at ${formatApiDateTime(date)} has no ${device} result from ${location}`,
    ]);
  return { snapshot, cell };
}

/**
 * `read` applied to the cell's stored Lighthouse result, inflated and parsed in one of the
 * gateway's places for heavy reads (heavy-reads.ts), its bytes handed back once parsed.
 */
function withResult<T>(cell: StoredCell, reads: HeavyReads, res: Response, read: (lhr: unknown) => T): Promise<T> {
  return reads.run(async () => {
    const bytes = await cell.resultJson();
    const lhr: unknown = JSON.parse(bytes.toString('utf8'));
    releaseResult(bytes);
    return read(lhr);
  }, whileConnected(res));
}

/** A kind read from the stored result that the result lacks. */
const noResultPart = (kind: string, why: string): ApiError =>
  new ApiError('NOT_FOUND', `The snapshot has no ${kind} for that cell.`, [`kind: ${why}`]);

/**
 * `perfwatch-<host>-<date>-<device>-<location>.trace.json`, anything but letters, digits, dots
 * and dashes (the date's colons, an IPv6 host's brackets) made a dash: a name every file system
 * takes, with nothing to escape in the header, which Chrome DevTools and Perfetto open as a trace.
 */
export function traceFileName({ url, date, device, location }: CellName): string {
  const name = `perfwatch-${new URL(url).hostname}-${date}-${device}-${location}`;
  return `${name.replace(/[^A-Za-z0-9.-]/g, '-')}.trace.json`;
}

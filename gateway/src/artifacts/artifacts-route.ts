import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import {
  API_ENDPOINTS,
  ApiError,
  formatApiDateTime,
  type Device,
  type Location,
  type ThirdPartySummary,
} from '@perfwatch/common';
import { callerProject } from '../accounts/caller-project.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import { whileConnected, type HeavyReads } from '../snapshots/heavy-reads.ts';
import { releaseResult } from '../snapshots/result-bytes.ts';
import type { SnapshotCells, SnapshotReadsStore, StoredCell } from '../snapshots/store/snapshots-store.ts';
import { sendArtifact, takesGzip } from './artifact-download.ts';
import type { ArtifactClock } from './artifact-states.ts';
import { filmstripOfJson, type FilmstripFrame } from './filmstrip.ts';
import { thirdPartiesOfJson } from './result-third-parties.ts';
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
 * the artifact store (artifact-download.ts); its filmstrip and third parties are read from the
 * stored result, in one of the places for heavy reads, as /v1/audit reads results. Tenancy as
 * /v1/audit's: another organisation's project, or one a ci token does not list, is a project not
 * found.
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
    if (kind === 'filmstrip' || kind === 'third-parties') {
      res.json({ ...name, ...(await resultPart(kind, cell, reads, res)) });
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
    const send = () =>
      sendArtifact(
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
    // Inflating costs this gateway's CPU for up to 32 times the stored bytes: such a download takes
    // one of the places for heavy reads, as results do; the stored gzip passed through does not.
    await (takesGzip(req) ? send() : reads.run(send, whileConnected(res)));
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
 * What the cell's stored Lighthouse result says of `kind`, read off its JSON (only the parts
 * needed are parsed) in one of the gateway's places for heavy reads (heavy-reads.ts), as
 * /v1/audit reads results; its bytes handed back once read.
 */
async function resultPart(
  kind: 'filmstrip' | 'third-parties',
  cell: StoredCell,
  reads: HeavyReads,
  res: Response,
): Promise<{ frames: FilmstripFrame[] } | { entities: ThirdPartySummary[] }> {
  const read = await reads.run(async () => {
    const bytes = await cell.resultJson();
    try {
      return kind === 'filmstrip' ? { frames: filmstripOfJson(bytes) } : { entities: thirdPartiesOfJson(bytes) };
    } finally {
      releaseResult(bytes);
    }
  }, whileConnected(res));
  if ('frames' in read && !read.frames)
    throw new ApiError('NOT_FOUND', 'The snapshot has no filmstrip for that cell.', [
      'kind: its stored Lighthouse result has no screenshot-thumbnails',
    ]);
  return read as { frames: FilmstripFrame[] } | { entities: ThirdPartySummary[] };
}

/**
 * `perfwatch-<host>-<date>-<device>-<location>.trace.json`, anything but letters, digits, dots
 * and dashes (the date's colons, an IPv6 host's brackets) made a dash: a name every file system
 * takes, with nothing to escape in the header, which Chrome DevTools and Perfetto open as a trace.
 */
export function traceFileName({ url, date, device, location }: CellName): string {
  const name = `perfwatch-${new URL(url).hostname}-${date}-${device}-${location}`;
  return `${name.replace(/[^A-Za-z0-9.-]/g, '-')}.trace.json`;
}

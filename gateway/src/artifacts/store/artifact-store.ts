import { z } from 'zod';
import { ARTIFACT_KINDS, DEVICES, LOCATIONS, type ArtifactKind, type Device, type Location } from '@perfwatch/common';

/**
 * The heavy evidence of a cell's representative run (its requests, its DevTools trace), kept
 * beside the store's compact records with a retention of its own: on disk (`fs`, for
 * `npm start`) or in an S3-compatible bucket (clusters). Both pass test/store/artifacts.contract.test.ts.
 */

/**
 * Which artifact: the owner organisation (records' `userId` since issue 33), the project, the
 * snapshot (its record's `id`), the cell and the kind.
 */
export interface ArtifactKey {
  orgId: string;
  projectId: string;
  snapshotId: string;
  device: Device;
  location: Location;
  kind: ArtifactKind;
}

export interface PutOptions {
  /** Past this many bytes of `body` the write is refused (ArtifactTooLarge) and nothing is kept. */
  maxBytes: number;
  contentType: string;
  /** The body as sent (already compressed): stored and given back as it is. */
  contentEncoding?: 'gzip';
}

export interface StoredArtifact {
  body: NodeJS.ReadableStream;
  bytes: number;
  contentType: string;
  contentEncoding?: string;
}

export interface ArtifactStore {
  /** Streams `body` in (never holding it whole); refuses (ArtifactTooLarge) past maxBytes, leaving nothing behind. */
  put(key: ArtifactKey, body: AsyncIterable<Uint8Array>, options: PutOptions): Promise<{ bytes: number }>;
  /** The stored bytes as a stream, or null when missing (expired or never written). */
  get(key: ArtifactKey): Promise<StoredArtifact | null>;
  /** Removes every artifact of a snapshot (all its cells and kinds). */
  removeSnapshot(orgId: string, projectId: string, snapshotId: string): Promise<void>;
  /** Removes artifacts written before `cutoff`; the count removed. */
  removeOlderThan(cutoff: Date): Promise<number>;
}

/** A body past its bound: the write is refused whole, nothing of it kept. */
export class ArtifactTooLarge extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number, options?: { cause?: unknown }) {
    super(`the artifact is larger than ${maxBytes} bytes: not kept`, options);
    this.name = 'ArtifactTooLarge';
    this.maxBytes = maxBytes;
  }
}

/**
 * Ids become path segments and object-key parts: only letters, digits, `_` and `-` (the stores'
 * hex ids, test ids), so no caller's string ever names a path of its own (`..`, `/`).
 */
const idSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be an id of letters, digits, _ and -');

const artifactKeySchema = z.object({
  orgId: idSchema,
  projectId: idSchema,
  snapshotId: idSchema,
  device: z.enum(DEVICES),
  location: z.enum(LOCATIONS),
  kind: z.enum(ARTIFACT_KINDS),
});

/** The snapshot's place: `<org>/<project>/<snapshot>`, every segment checked. */
export function snapshotSegments(orgId: string, projectId: string, snapshotId: string): string[] {
  return [idSchema.parse(orgId), idSchema.parse(projectId), idSchema.parse(snapshotId)];
}

/**
 * Whether `segments` (a path below the store's root, or an object key split at `/`) name an
 * artifact as artifactSegments makes them. Retention removes only these: the bucket or directory
 * may hold what is not the gateway's (a shared bucket, ARTIFACT_DIR set to a directory in use).
 */
export function isArtifactPlace(segments: readonly string[]): boolean {
  if (segments.length !== 4) return false;
  const [orgId, projectId, snapshotId, name] = segments;
  return [orgId, projectId, snapshotId].every((id) => isArtifactId(id ?? '')) && isArtifactName(name ?? '');
}

/** Whether `name` is an id as the keys' segments are (letters, digits, `_` and `-`). */
export const isArtifactId = (name: string): boolean => idSchema.safeParse(name).success;

/** `<device>-<location>-<kind>`, the last segment of an artifact's place. */
export function isArtifactName(name: string): boolean {
  return DEVICES.some((device) =>
    LOCATIONS.some((location) => ARTIFACT_KINDS.some((kind) => name === `${device}-${location}-${kind}`)),
  );
}

/** The artifact's place below the store's root: the snapshot's segments, then `<device>-<location>-<kind>`. */
export function artifactSegments(key: ArtifactKey): string[] {
  const { orgId, projectId, snapshotId, device, location, kind } = artifactKeySchema.parse(key);
  return [...snapshotSegments(orgId, projectId, snapshotId), `${device}-${location}-${kind}`];
}

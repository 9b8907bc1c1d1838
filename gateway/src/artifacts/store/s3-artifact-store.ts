import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  NoSuchKey,
  type S3Client,
  S3ServiceException,
  type _Object,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import {
  ArtifactTooLarge,
  artifactSegments,
  isArtifactPlace,
  snapshotSegments,
  type ArtifactKey,
  type ArtifactStore,
} from './artifact-store.ts';
import { boundedBody } from './bounded-body.ts';

/**
 * Artifacts as objects in an S3-compatible bucket, keyed `<org>/<project>/<snapshot>/<device>-<location>-<kind>`.
 * A body is streamed as a multipart upload in parts of PART_BYTES, one part in
 * flight: what a write holds is about two parts, whatever the artifact's size. An upload that
 * fails (too large, the server gone) is aborted, so nothing of it is kept; one whose server went
 * away mid-write cannot be told, and the retention pass aborts it once past the cutoff (its parts
 * were never an object). The object's LastModified is its write time, what retention reads.
 */
export interface S3ArtifactStoreOptions {
  client: S3Client;
  bucket: string;
}

/**
 * What the store's S3 client may wait: the SDK waits without end by default, so a server that
 * takes connections and never answers (frozen, a half-open network path) would hold an update's
 * cell, and the scheduler's retention pass, for ever. An attempt is given up after this much
 * silence on its socket (not a bound on the whole request: a part upload that is moving keeps
 * going), and tried once more: an artifact is given up as missing within about a minute at worst.
 * Used where the client is made (artifact-store-from-settings.ts).
 */
export const S3_CLIENT_LIMITS = {
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 5_000, socketTimeout: 15_000 },
} as const;

/** S3's smallest part. */
const PART_BYTES = 5 * 1024 * 1024;
/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1_000;

export function createS3ArtifactStore({ client, bucket }: S3ArtifactStoreOptions): ArtifactStore {
  const keyOf = (key: ArtifactKey) => artifactSegments(key).join('/');

  return {
    async put(key, body, { maxBytes, contentType, contentEncoding }) {
      const counted = boundedBody(body, maxBytes);
      const upload = new Upload({
        client,
        params: {
          Bucket: bucket,
          Key: keyOf(key),
          // A byte stream, not object mode: it reads one chunk ahead, not sixteen (4 MiB per write).
          Body: Readable.from(counted, { objectMode: false }),
          ContentType: contentType,
          ...(contentEncoding ? { ContentEncoding: contentEncoding } : {}),
        },
        partSize: PART_BYTES,
        queueSize: 1,
        leavePartsOnError: false,
      });
      try {
        await upload.done();
      } catch (error) {
        // The SDK may wrap what the body threw; the count says whether it was the bound.
        if (counted.bytes() > maxBytes && !(error instanceof ArtifactTooLarge))
          throw new ArtifactTooLarge(maxBytes, { cause: error });
        throw error;
      }
      return { bytes: counted.bytes() };
    },
    async get(key) {
      try {
        const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: keyOf(key) }));
        if (!answer.Body) return null;
        return {
          body: answer.Body as Readable,
          bytes: answer.ContentLength ?? 0,
          contentType: answer.ContentType ?? 'application/octet-stream',
          ...(answer.ContentEncoding ? { contentEncoding: answer.ContentEncoding } : {}),
        };
      } catch (error) {
        if (isMissing(error)) return null;
        throw error;
      }
    },
    async removeSnapshot(orgId, projectId, snapshotId) {
      const snapshotPrefix = `${snapshotSegments(orgId, projectId, snapshotId).join('/')}/`;
      await removeListed(client, bucket, snapshotPrefix, () => true);
    },
    async removeOlderThan(cutoff) {
      const removed = await removeListed(
        client,
        bucket,
        '',
        (object) => object.LastModified !== undefined && object.LastModified < cutoff && isArtifactKey(object.Key),
      );
      await abortAbandonedUploads(client, bucket, cutoff);
      return removed;
    },
  };
}

/** Only the gateway's own objects are removed: the bucket may hold others' (it is not required to be perfwatch's alone). */
const isArtifactKey = (key: string | undefined): boolean => key !== undefined && isArtifactPlace(key.split('/'));

function isMissing(error: unknown): boolean {
  return error instanceof NoSuchKey || (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404);
}

/**
 * Aborts the artifacts' multipart uploads begun before `cutoff` and never completed: a write cut short by
 * the server going away could not abort its own upload, and the server keeps its parts (unlisted
 * as objects, but stored) until told. No write lasts as long as a retention.
 */
async function abortAbandonedUploads(client: S3Client, bucket: string, cutoff: Date): Promise<void> {
  let markers: { KeyMarker?: string | undefined; UploadIdMarker?: string | undefined } = {};
  do {
    const page = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, ...markers }));
    for (const { Key, UploadId, Initiated } of page.Uploads ?? [])
      if (Key && UploadId && Initiated && Initiated < cutoff && isArtifactKey(Key))
        await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key, UploadId }));
    markers = page.IsTruncated ? { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker } : {};
  } while (markers.KeyMarker);
}

/** Deletes the objects under `prefix` that `chosen` picks, page by page; how many. */
async function removeListed(
  client: S3Client,
  bucket: string,
  prefix: string,
  chosen: (object: _Object) => boolean,
): Promise<number> {
  let removed = 0;
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: DELETE_BATCH, ContinuationToken: token }),
    );
    const keys = (page.Contents ?? []).filter(chosen).flatMap((object) => (object.Key ? [{ Key: object.Key }] : []));
    if (keys.length > 0) {
      const answer = await client.send(
        new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }),
      );
      const failed = answer.Errors ?? [];
      if (failed.length > 0)
        throw new Error(
          `the S3 server did not delete ${failed.length} artifacts: ${failed[0]?.Code} ${failed[0]?.Message}`,
        );
      removed += keys.length;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return removed;
}

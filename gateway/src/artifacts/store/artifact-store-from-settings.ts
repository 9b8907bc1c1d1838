import { join, resolve } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import type { z } from 'zod';
import { ConfigError } from '@perfwatch/common';
import type { artifactSettings } from '../../settings/artifacts.ts';
import type { ArtifactStore } from './artifact-store.ts';
import { createFsArtifactStore } from './fs-artifact-store.ts';
import { createS3ArtifactStore, S3_CLIENT_LIMITS } from './s3-artifact-store.ts';

/** What the store is made of: where and how, not how often or how many at once. */
type ArtifactSettings = Omit<
  z.output<z.ZodObject<typeof artifactSettings.settings>>,
  'ARTIFACT_TRANSFERS_AT_ONCE' | 'ARTIFACT_RETENTION_DAYS'
> & {
  PERFWATCH_DATA_DIR?: string | undefined;
};

/** The store the settings name, and where it is for a log line (never a credential). */
export function artifactStoreFromSettings(settings: ArtifactSettings): { store: ArtifactStore; where: string } {
  if (settings.ARTIFACT_STORE === 'fs') {
    const dir = resolve(settings.ARTIFACT_DIR ?? join(settings.PERFWATCH_DATA_DIR ?? './data', 'artifacts'));
    return { store: createFsArtifactStore({ dir }), where: dir };
  }
  const bucket = settings.ARTIFACT_S3_BUCKET;
  const { ARTIFACT_S3_ACCESS_KEY_ID: accessKeyId, ARTIFACT_S3_SECRET_ACCESS_KEY: secretAccessKey } = settings;
  const problems = [
    ...(bucket ? [] : ['ARTIFACT_S3_BUCKET: required with ARTIFACT_STORE=s3']),
    ...((accessKeyId === undefined) !== (secretAccessKey === undefined)
      ? [
          'ARTIFACT_S3_ACCESS_KEY_ID and ARTIFACT_S3_SECRET_ACCESS_KEY: set both, or neither (the AWS SDK then finds credentials)',
        ]
      : []),
  ];
  if (problems.length > 0 || !bucket) throw new ConfigError(problems);
  const client = new S3Client({
    region: settings.ARTIFACT_S3_REGION,
    forcePathStyle: settings.ARTIFACT_S3_FORCE_PATH_STYLE,
    ...(settings.ARTIFACT_S3_ENDPOINT ? { endpoint: settings.ARTIFACT_S3_ENDPOINT } : {}),
    ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
    // Checksums only where S3 requires them: S3-compatible servers refuse the SDK's newer default trailers.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...S3_CLIENT_LIMITS,
  });
  const where = `S3 bucket ${bucket}${settings.ARTIFACT_S3_ENDPOINT ? ` at ${settings.ARTIFACT_S3_ENDPOINT}` : ''}`;
  return { store: createS3ArtifactStore({ client, bucket }), where };
}

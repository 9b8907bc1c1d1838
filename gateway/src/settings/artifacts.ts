import { z } from 'zod';
import { settingGroup } from '@perfwatch/common';

const flag = z
  .enum(['true', 'false'])
  .default('false')
  .transform((value) => value === 'true');

/** Where the representative runs' requests and traces are kept, and for how long (docs/artifacts.md); each kind's size bound is ARTIFACT_MAX_BYTES in @perfwatch/common. */
export const artifactSettings = settingGroup('Artifacts', {
  ARTIFACT_STORE: z
    .enum(['fs', 's3'])
    .default('fs')
    .describe(
      'fs: artifacts are files under ARTIFACT_DIR (one gateway replica, or a shared volume). s3: objects in an ' +
        'S3-compatible bucket (ARTIFACT_S3_*), for a fleet of replicas.',
    ),
  /** No default here: the store works it out beside the embedded store (artifact-store-from-settings.ts). */
  ARTIFACT_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Where the fs store keeps artifacts. Unset: `artifacts` beside the embedded store (PERFWATCH_DATA_DIR, else ./data).',
    ),
  ARTIFACT_S3_ENDPOINT: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe("The S3 server's URL (MinIO, SeaweedFS, Ceph…). Unset: AWS's own endpoint for ARTIFACT_S3_REGION."),
  ARTIFACT_S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')
    .optional()
    .describe('The bucket that holds the artifacts (it must exist); required with ARTIFACT_STORE=s3.'),
  ARTIFACT_S3_REGION: z.string().min(1).default('us-east-1').describe("The bucket's region."),
  ARTIFACT_S3_ACCESS_KEY_ID: z
    .string()
    .min(1)
    .optional()
    .describe("The access key's id. Unset (with the secret): the AWS SDK's own chain (AWS_* variables, a role)."),
  ARTIFACT_S3_SECRET_ACCESS_KEY: z
    .string()
    .min(1)
    .optional()
    .describe("The access key's secret (never logged); set with ARTIFACT_S3_ACCESS_KEY_ID, e.g. from a Secret."),
  ARTIFACT_S3_FORCE_PATH_STYLE: flag.describe(
    'true: bucket in the path (http://host/bucket/key), which most S3-compatible servers need.',
  ),
  ARTIFACT_TRANSFERS_AT_ONCE: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(4)
    .describe(
      'Artifacts this gateway takes in from agents at once; the others wait their turn (an S3 write holds a 5 MiB part, fs a chunk).',
    ),
  ARTIFACT_RETENTION_DAYS: z.coerce
    .number()
    .min(1)
    .max(36_500)
    .default(30)
    .describe('Artifacts older than this are deleted by the scheduler (every RETENTION_EVERY_MS).'),
});

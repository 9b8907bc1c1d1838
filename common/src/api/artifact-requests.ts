import { z } from 'zod';
import { thirdPartySummarySchema } from '../artifact-analysis.ts';
import { DEVICES, LOCATIONS } from '../ids.ts';
import { dateTime, oneOf, projectUrl } from './request-fields.ts';

// ---- /v1/artifacts (issue 35) -----------------------------------------------------------

/**
 * What /v1/artifacts reads of a cell: its representative run's requests (NDJSON, one line per
 * request and a last `{"end":true,…}` line) and DevTools trace, from the artifact store; its
 * filmstrip and its third parties' costs, from the stored Lighthouse result (docs/artifacts.md,
 * "Reading artifacts").
 */
const ARTIFACT_READ_KINDS = ['requests', 'trace', 'filmstrip', 'third-parties'] as const;

const artifactFields = {
  url: projectUrl,
  date: dateTime('date').meta({ description: 'Snapshot date, UTC.' }),
  device: oneOf('device', DEVICES).meta({ description: 'Device class of the cell.' }),
  location: oneOf('location', LOCATIONS)
    .optional()
    .meta({ description: "Location of the cell; omitted: the project's default location." }),
  kind: oneOf('kind', ARTIFACT_READ_KINDS).meta({
    description:
      'requests: NDJSON of the network requests; trace: the DevTools trace (open it in Chrome DevTools or Perfetto); filmstrip: the screenshots taken while the page loaded; third-parties: what each entity (third party, and the first party) cost.',
  }),
};
export const artifactsQuerySchema = z.strictObject(artifactFields);
/** @alias A POST body takes the same parameters as the query string. */
export const artifactsBodySchema = artifactsQuerySchema;

/** Which cell an answer is of, as the request named it (the location resolved). */
const cellFields = {
  url: z.string(),
  date: z.string(),
  device: z.enum(DEVICES),
  location: z.enum(LOCATIONS),
};

/** kind=filmstrip: Lighthouse's `screenshot-thumbnails` frames, each a small JPEG as a data: URL. */
const filmstripSchema = z
  .object({
    ...cellFields,
    frames: z.array(
      z.object({
        /** Milliseconds since the navigation started. */
        timing: z.number(),
        data: z.string(),
      }),
    ),
  })
  .meta({ id: 'Filmstrip' });

/** kind=third-parties: each entity's bytes, main-thread and blocking time and requests, by Lighthouse's classification. */
const thirdPartiesAnswerSchema = z
  .object({ ...cellFields, entities: z.array(thirdPartySummarySchema) })
  .meta({ id: 'ThirdParties' });

/** kind=trace, as Chrome DevTools and Perfetto open it. */
const traceSchema = z.looseObject({ traceEvents: z.array(z.unknown()) }).meta({
  id: 'Trace',
  description: "A DevTools trace (Chrome's trace event format), as a file to open in Chrome DevTools or Perfetto.",
});

/** The JSON kinds' answers (requests is NDJSON, documented apart). */
export const artifactJsonAnswerSchema = z.union([filmstripSchema, thirdPartiesAnswerSchema, traceSchema]);

/**
 * An artifact as a snapshot reports it on its cell (`artifacts` of /v1/audit and a sync
 * /v1/update): kept until `expires`, missing and why, or `expired` at that date.
 */
const reportedArtifactSchema = z.discriminatedUnion('state', [
  z.object({
    state: z.literal('stored'),
    bytes: z.number().int().nonnegative(),
    truncated: z.boolean().optional(),
    expires: z.string(),
  }),
  z.object({ state: z.literal('missing'), reason: z.string() }),
  z.object({ state: z.literal('expired'), expired: z.string() }),
]);
export const reportedArtifactsSchema = z
  .object({ requests: reportedArtifactSchema.optional(), trace: reportedArtifactSchema.optional() })
  .meta({
    id: 'CellArtifacts',
    description:
      "The representative run's artifacts (added with issue 35): each stored (until `expires`), missing (`reason`) or expired; read them with /v1/artifacts. Absent from cells measured before artifacts were kept.",
  });

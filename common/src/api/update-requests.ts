import { z } from 'zod';
import { UPDATE_MODES } from '../ids.ts';
import { device, projectUrl } from './request-fields.ts';
import { revisionBodyFields, revisionQueryFields } from './revision-fields.ts';

// ---- /v1/update -------------------------------------------------------------------------

const updateFields = {
  url: projectUrl,
  device: device
    .optional()
    .meta({ description: "Device class; omitted: the project's devices (both unless its settings say otherwise)." }),
  mode: z
    .enum(UPDATE_MODES, { error: 'mode must be sync or async' })
    .default('sync')
    .meta({ description: 'sync (default) waits for the result; async returns {ok: 1, id} at once.' }),
  updateType: z
    .enum(['manual', 'ci'], { error: 'updateType must be manual or ci' })
    .default('manual')
    .meta({ description: 'ci marks updates started by a CI pipeline.' }),
};
/** Stored with the snapshot, shown by /v1/audit and /v1/updates, filtered by /v1/overview. */
const updateRevision = {
  commit: 'The commit measured (hex, 7 to 64 digits; kept lower-case).',
  branch: 'The branch measured (a git ref name).',
  pullRequest: 'The pull or merge request measured (its number).',
};
export const updateQuerySchema = z.strictObject({ ...updateFields, ...revisionQueryFields(updateRevision) });
export const updateBodySchema = z.strictObject({ ...updateFields, ...revisionBodyFields(updateRevision) });

// ---- /v1/updates/{id} ---------------------------------------------------------------------

export const updateIdParamsSchema = z.strictObject({
  id: z
    .string()
    .regex(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      'id must be an update id as /v1/update?mode=async returned it',
    )
    .meta({ description: 'The id /v1/update?mode=async answered with.' }),
});
/** Nothing besides the id, which is in the path. */
export const updateStatusQuerySchema = z.strictObject({});
/** @alias A POST body takes the same parameters as the query string. */
export const updateStatusBodySchema = updateStatusQuerySchema;

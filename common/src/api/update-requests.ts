import { z } from 'zod';
import { UPDATE_MODES } from '../ids.ts';
import { device, projectUrl } from './request-fields.ts';

// ---- /v1/update -------------------------------------------------------------------------

const updateFields = {
  url: projectUrl,
  device: device.optional(),
  mode: z
    .enum(UPDATE_MODES, { error: 'mode must be sync or async' })
    .default('sync')
    .meta({ description: 'sync (default) waits for the result; async returns {ok: 1, id} at once.' }),
  updateType: z
    .enum(['manual', 'ci'], { error: 'updateType must be manual or ci' })
    .default('manual')
    .meta({ description: 'ci marks updates started by a CI pipeline.' }),
};
export const updateQuerySchema = z.strictObject(updateFields);
export const updateBodySchema = z.strictObject(updateFields);

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

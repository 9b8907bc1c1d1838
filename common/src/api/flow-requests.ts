import { z } from 'zod';
import { flowSchema, flowShapeSchema, type Flow } from '../flow.ts';
import { projectUrl } from './request-fields.ts';

// ---- /v1/projects/flow -------------------------------------------------------------------

/** What a request of /v1/projects/flow asks: the flow (GET), a new one (PUT), its removal (DELETE). */
export type FlowParams = { url: string; set?: Flow };

/** GET reads and DELETE removes a project's flow, named by its URL. */
export const flowQuerySchema = z.strictObject({ url: projectUrl }).transform(({ url }): FlowParams => ({ url }));

/** PUT: the project's flow, replacing any it had. */
export const flowBodySchema = z
  .strictObject({
    url: projectUrl,
    flow: flowSchema.meta({
      description:
        "The steps, in order: navigate {name, url?} (absent url: the project's page), timespan {name, actions: [click|type|press|scroll|waitFor|select]}, snapshot {name}. A refusal names the step.",
    }),
  })
  .transform(({ url, flow }): FlowParams => ({ url, set: flow }));

/** The project's flow (null: none, its updates measure a navigation of its URL). */
export const flowViewSchema = z
  .object({ url: z.string(), flow: flowShapeSchema.nullable() })
  .meta({ id: 'ProjectFlow' });
export type FlowView = z.infer<typeof flowViewSchema>;
/** DELETE: that it was removed. */
export const flowRemovedSchema = z
  .object({ url: z.string(), removed: z.literal(true) })
  .meta({ id: 'ProjectFlowRemoved' });

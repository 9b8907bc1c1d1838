import { z } from 'zod';
import { once, pageLimit, projectUrl } from './request-fields.ts';

// ---- /v1/webhooks -----------------------------------------------------------------------

/** What to do, and which page of the caller's webhooks the answer lists. */
export type WebhooksParams = (
  | { action: 'list' }
  | { action: 'add'; targetUrl: string; project: string | null; format: 'json' | 'slack' }
  | { action: 'remove'; id: string }
) & { page: { after?: string; limit?: number } };

const webhookId = /^[0-9a-f]{24}$/;
/** Webhooks a page of `/v1/webhooks` lists by default, and at most. */
export const WEBHOOK_PAGE = { default: 20, max: 100 } as const;

const webhookFields = {
  targetUrl: z.string(once('targetUrl')).min(1).max(2048, 'targetUrl is longer than 2048 characters').optional().meta({
    description:
      "Adds a webhook posting to this https URL (a public address, unless the gateway's PERFWATCH_ALLOW_TARGETS allows it; plain http only to addresses it lists). Refused past the gateway's WEBHOOK_MAX_PER_USER.",
  }),
  project: projectUrl
    .optional()
    .meta({ description: "With targetUrl: only this project's events; omitted: every project of yours." }),
  format: z.enum(['json', 'slack'], { error: 'format must be json or slack' }).optional().meta({
    description: "With targetUrl: json (the signed payload, default) or slack (Slack's incoming-webhook message).",
  }),
  remove: z
    .string(once('remove'))
    .regex(webhookId, 'remove must be a webhook id as listed')
    .optional()
    .meta({ description: 'Removes the webhook with this id, with its deliveries.' }),
  after: z
    .string(once('after'))
    .regex(webhookId, 'after must be a webhook id, as `next` gave it')
    .optional()
    .meta({ description: 'Lists the webhooks after this one: the `next` of the page before.' }),
  limit: pageLimit(WEBHOOK_PAGE.max)
    .optional()
    .meta({
      description: `Webhooks in the page, oldest first; ${WEBHOOK_PAGE.default} by default, ${WEBHOOK_PAGE.max} at most.`,
    }),
};

type WebhookFields = { [K in keyof typeof webhookFields]?: z.output<(typeof webhookFields)[K]> };

function webhookAction(
  { targetUrl, project, format, remove, after, limit }: WebhookFields,
  ctx: z.RefinementCtx,
): WebhooksParams {
  const page = { ...(after !== undefined ? { after } : {}), ...(limit !== undefined ? { limit } : {}) };
  if (remove !== undefined) {
    if (targetUrl !== undefined || project !== undefined || format !== undefined)
      ctx.addIssue({ code: 'custom', message: 'remove takes no other parameter' });
    return { action: 'remove', id: remove, page };
  }
  if (targetUrl === undefined) {
    if (project !== undefined || format !== undefined)
      ctx.addIssue({ code: 'custom', message: 'project and format go with targetUrl' });
    return { action: 'list', page };
  }
  return { action: 'add', targetUrl, project: project ?? null, format: format ?? 'json', page };
}
/** GET lists; a webhook is added or removed by POST only. */
export const webhooksQuerySchema = z
  .strictObject({ after: webhookFields.after, limit: webhookFields.limit })
  .transform(webhookAction);
export const WEBHOOKS_WRITES = ['targetUrl', 'project', 'format', 'remove'] as const;
export const webhooksBodySchema = z.strictObject(webhookFields).transform(webhookAction);

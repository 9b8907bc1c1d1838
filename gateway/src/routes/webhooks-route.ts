import type { Request, Response } from 'express';
import type { TargetGuard } from '@perfwatch/agent';
import { ApiError, type WebhookList } from '@perfwatch/common';
import { parseRequest, webhooksBodySchema, webhooksQuerySchema } from '../request-params.ts';
import type { Store } from '../store/store.ts';
import { addWebhook, listWebhookViews, webhookView, WebhookRefused } from '../webhook-registry.ts';
import { callerProject } from './caller-project.ts';

/**
 * `GET|POST /v1/webhooks`: the caller's webhooks with their newest deliveries; with `targetUrl`
 * one is added first (its secret in `created`, this once), with `remove` one is removed.
 */
export function webhooksRoute({ store, guard }: { store: Store; guard: TargetGuard }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, { query: webhooksQuerySchema, body: webhooksBodySchema });
    const userId = req.caller!.userId;
    const answer: Omit<WebhookList, 'webhooks'> = {};
    if (params.action === 'add') {
      const project = params.project === null ? null : await callerProject(store, req, params.project);
      try {
        const hook = await addWebhook(store, guard, {
          userId,
          targetUrl: params.targetUrl,
          projectUrl: project?.url ?? null,
          format: params.format,
        });
        answer.created = { ...webhookView(hook, []), secret: hook.secret };
      } catch (error) {
        if (error instanceof WebhookRefused)
          throw new ApiError('BAD_REQUEST', 'The webhook target is refused.', [`targetUrl: ${error.message}`]);
        throw error;
      }
    } else if (params.action === 'remove') {
      if (!(await store.removeWebhook(userId, params.id)))
        throw new ApiError('NOT_FOUND', 'Webhook not found.', [`remove: no webhook of yours has the id ${params.id}`]);
      answer.removed = params.id;
    }
    // Never cached: a secret may be in it.
    res
      .set('Cache-Control', 'no-store')
      .json({ webhooks: await listWebhookViews(store, userId), ...answer } satisfies WebhookList);
  };
}

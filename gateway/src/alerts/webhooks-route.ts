import type { Request, Response } from 'express';
import { API_ENDPOINTS, ApiError, WEBHOOK_PAGE, type WebhookList } from '@perfwatch/common';
import type { AuditLog } from '../audit-log/audit-log.ts';
import { hostOf } from '../audit-log/audit-details.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import { WebhookLimitReached, type WebhooksStore } from './store/webhooks-store.ts';
import {
  addWebhook,
  listWebhookPage,
  UnknownCursor,
  webhookView,
  WebhookRefused,
  type WebhookRules,
} from './webhook-registry.ts';
import { callerProject } from '../accounts/caller-project.ts';

/**
 * `GET|POST /v1/webhooks`: a page of the caller's webhooks with their newest deliveries; with
 * `targetUrl` one is added first (its secret in `created`, this once), with `remove` one is
 * removed. The webhook errors become the API's here, and nowhere else.
 */
export function webhooksRoute({
  store,
  rules,
  audit,
}: {
  store: Pick<ProjectsStore, 'findProject'> &
    Pick<WebhooksStore, 'addWebhook' | 'listWebhooks' | 'listDeliveries' | 'removeWebhook'>;
  rules: WebhookRules;
  audit: AuditLog;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.webhooks);
    const userId = req.caller!.orgId;
    const answer: Omit<WebhookList, 'webhooks'> = {};
    if (params.action === 'add') {
      const project = params.project === null ? null : await callerProject(store, req, params.project);
      try {
        const hook = await addWebhook(store, rules, {
          userId,
          targetUrl: params.targetUrl,
          projectUrl: project?.url ?? null,
          format: params.format,
        });
        answer.created = { ...webhookView(hook, []), secret: hook.secret };
        // The target's host alone: its path may hold a secret of its own (a Slack webhook's does).
        await audit.record(req.caller!, {
          action: 'webhook.added',
          target: hook.id,
          details: { host: hostOf(hook.targetUrl), project: hook.projectUrl, format: params.format },
        });
      } catch (error) {
        if (error instanceof WebhookRefused)
          throw new ApiError('BAD_REQUEST', 'The webhook target is refused.', [`targetUrl: ${error.message}`]);
        if (error instanceof WebhookLimitReached)
          throw new ApiError('BAD_REQUEST', 'Too many webhooks.', [
            `targetUrl: ${error.message} (the gateway's WEBHOOK_MAX_PER_USER is ${error.limit})`,
          ]);
        throw error;
      }
    } else if (params.action === 'remove') {
      if (!(await store.removeWebhook(userId, params.id)))
        throw new ApiError('NOT_FOUND', 'Webhook not found.', [`remove: no webhook of yours has the id ${params.id}`]);
      answer.removed = params.id;
      await audit.record(req.caller!, { action: 'webhook.removed', target: params.id });
    }
    let page: Awaited<ReturnType<typeof listWebhookPage>>;
    try {
      page = await listWebhookPage(store, userId, { ...params.page, limit: params.page.limit ?? WEBHOOK_PAGE.default });
    } catch (error) {
      if (error instanceof UnknownCursor)
        throw new ApiError('BAD_REQUEST', 'Unknown page.', [`after: ${error.message}`]);
      throw error;
    }
    // Never cached: a secret may be in it.
    res.set('Cache-Control', 'no-store').json({ ...page, ...answer } satisfies WebhookList);
  };
}

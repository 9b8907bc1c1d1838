import type { Request, Response } from 'express';
import { API_ENDPOINTS, auditLogCursor, type AuditLogPage, type AuditLogParams } from '@perfwatch/common';
import type { AccountsStore } from '../accounts/store/accounts-store.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { AuditEntryRecord, AuditLogStore } from './store/audit-log-store.ts';

type AuditLogRouteStore = Pick<AuditLogStore, 'listAuditEntries'> & Pick<AccountsStore, 'listUsers'>;

/** A page's entries as the API shows them, each actor named by their user's name as it is now. */
export function auditLogPage(
  entries: readonly AuditEntryRecord[],
  limit: number,
  names: ReadonlyMap<string, string>,
): AuditLogPage {
  const shown = entries.slice(0, limit);
  const last = shown.at(-1);
  return {
    entries: shown.map(({ id, at, actor, action, target, details }) => ({
      id,
      at: at.toISOString(),
      actor: {
        userId: actor.userId,
        name: names.get(actor.userId) ?? null,
        via: actor.via,
        tokenPrefix: actor.tokenPrefix,
      },
      action,
      target,
      details,
    })),
    // One entry past the page was asked for: it tells whether there is a page after this one.
    ...(entries.length > limit && last ? { next: auditLogCursor(last) } : {}),
  };
}

/**
 * `GET|POST /v1/audit-log`: a page of the caller's organisation's audit log, the newest first
 * (`before`: older than the page that gave it as `next`; `action`: only its entries). Names are
 * read when the log is: a renamed member shows by their new name.
 */
export function auditLogRoute({ store }: { store: AuditLogRouteStore }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params: AuditLogParams = parseRequest(req, API_ENDPOINTS.auditLog);
    const entries = await store.listAuditEntries(req.caller!.orgId, {
      limit: params.limit + 1,
      before: params.before,
      action: params.action,
    });
    // An admin's page, not a hot path: one read of the users names every actor of it.
    const names =
      entries.length === 0 ? new Map() : new Map((await store.listUsers()).map((user) => [user.id, user.name]));
    res.set('Cache-Control', 'no-store').json(auditLogPage(entries, params.limit, names));
  };
}

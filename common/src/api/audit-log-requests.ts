import { z } from 'zod';
import { auditActionSchema } from '../audit-log.ts';
import { once, pageLimit, parsedString } from './request-fields.ts';

// ---- /v1/audit-log ----------------------------------------------------------------------

/** Entries a page of `/v1/audit-log` lists by default, and at most. */
export const AUDIT_LOG_PAGE = { default: 50, max: 200 } as const;

/** Where a page starts: after the entry at `at` with `id`, the last of the page before. */
export interface AuditLogCursor {
  at: Date;
  id: string;
}

const CURSOR = /^([0-9a-z]{1,11})_([0-9a-f]{24})$/;

/** The `next` of a page that ended with this entry (opaque to clients: they hand it back as `before`). */
export const auditLogCursor = ({ at, id }: AuditLogCursor): string => `${at.getTime().toString(36)}_${id}`;

/** A `next` read back; null for anything no page gave. */
export function parseAuditLogCursor(text: string): AuditLogCursor | null {
  const match = CURSOR.exec(text);
  if (!match) return null;
  const at = new Date(parseInt(match[1]!, 36));
  return Number.isNaN(at.getTime()) ? null : { at, id: match[2]! };
}

const auditLogFields = {
  limit: pageLimit(AUDIT_LOG_PAGE.max)
    .optional()
    .meta({
      description: `Entries in the page, the newest first; ${AUDIT_LOG_PAGE.default} by default, ${AUDIT_LOG_PAGE.max} at most.`,
    }),
  before: parsedString(
    z.string(once('before')).max(64, 'before must be the `next` of a page'),
    parseAuditLogCursor,
    'before must be the `next` of a page',
  )
    .optional()
    .meta({ description: 'Lists the entries older than this: the `next` of the page before.' }),
  action: auditActionSchema.optional().meta({ description: "Only this action's entries." }),
};

export type AuditLogParams = {
  limit: number;
  before?: AuditLogCursor | undefined;
  action?: z.output<typeof auditActionSchema> | undefined;
};

const withDefaults = ({
  limit,
  ...rest
}: { [K in keyof typeof auditLogFields]?: z.output<(typeof auditLogFields)[K]> }): AuditLogParams => ({
  ...rest,
  limit: limit ?? AUDIT_LOG_PAGE.default,
});

/** A page of the caller's organisation's audit log, by GET or POST alike: reading it changes nothing. */
export const auditLogQuerySchema = z.strictObject(auditLogFields).transform(withDefaults);
export const auditLogBodySchema = z.strictObject(auditLogFields).transform(withDefaults);

import { z } from 'zod';
import {
  AUDIT_LOG_PAGE,
  auditActionSchema,
  auditDetailsSchema,
  type AuditAction,
  type AuditDetails,
} from '@perfwatch/common';
import type { StoredForms } from '../../store/record-forms.ts';

/** One change in an organisation's audit log. */
export interface AuditEntryRecord {
  id: string;
  /** The organisation the change was made in: only its members' listing shows it. */
  orgId: string;
  at: Date;
  /** Who: the member, and how they came (a token's public prefix, or a dashboard session). */
  actor: { userId: string; via: 'token' | 'session'; tokenPrefix: string | null };
  action: AuditAction;
  target: string;
  details: AuditDetails;
}

export type NewAuditEntry = Omit<AuditEntryRecord, 'id'>;

/** Where a page of a listing starts: after the entry at `at` with `id` (the last of the page before). */
interface AuditCursor {
  at: Date;
  id: string;
}

/** Which entries a listing returns (see listAuditEntries). */
export interface AuditPage {
  limit: number;
  before?: AuditCursor | undefined;
  action?: AuditAction | undefined;
}

/**
 * Entries one listing returns at most, whatever it asks: the API's largest page and one more,
 * which tells the route whether another page follows.
 */
const MAX_AUDIT_PAGE = AUDIT_LOG_PAGE.max + 1;

/** Audit log entries: appended, listed, never changed or removed (there is no method for it). */
export interface AuditLogStore {
  appendAuditEntry(entry: NewAuditEntry): Promise<AuditEntryRecord>;
  /**
   * An organisation's entries, the newest first (by `at`, then by id), older than `before` when
   * given, only `action`'s when given; `limit` of them, MAX_AUDIT_PAGE at most.
   */
  listAuditEntries(orgId: string, page: AuditPage): Promise<AuditEntryRecord[]>;
}

/** A listing's `limit` as the backends take it: 1 to MAX_AUDIT_PAGE. */
export const auditPageSize = (limit: number): number => Math.max(1, Math.min(MAX_AUDIT_PAGE, Math.floor(limit)));

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function auditLogRecords(forms: StoredForms) {
  const { id, time } = forms;
  const entry = z.object({
    id,
    orgId: id,
    at: time,
    actor: forms.structured(
      z.object({
        userId: z.string(),
        via: z.enum(['token', 'session']),
        tokenPrefix: z.string().nullable().default(null),
      }),
    ),
    action: auditActionSchema,
    target: z.string(),
    details: forms.structured(auditDetailsSchema).default({}),
  }) satisfies z.ZodType<AuditEntryRecord>;
  return { entry };
}

import { z } from 'zod';

/**
 * What the audit log of an organisation records (issue 33): one name per kind of change, as
 * `<what>.<happened>`. A secret's entry says that it was set or cleared, never its value.
 */
const AUDIT_ACTIONS = [
  'organisation.created',
  'organisation.changed',
  'member.added',
  'member.changed',
  'member.removed',
  'token.created',
  'token.revoked',
  'project.created',
  'project.changed',
  'project.removed',
  'budgets.replaced',
  'credentials.set',
  'credentials.cleared',
  'flow.set',
  'flow.removed',
  'webhook.added',
  'webhook.removed',
  'repository.linked',
  'repository.unlinked',
  'annotation.added',
  'annotation.removed',
  'site.created',
  'site.changed',
  'site.removed',
] as const;
export const auditActionSchema = z
  .enum(AUDIT_ACTIONS, { error: `action must be one of ${AUDIT_ACTIONS.join(', ')}` })
  .meta({ id: 'AuditAction' });
export type AuditAction = z.infer<typeof auditActionSchema>;

/** What an entry says besides its target: short names and plain values, never a secret. */
export const auditDetailsSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
export type AuditDetails = z.infer<typeof auditDetailsSchema>;

/** One change, as `/v1/audit-log` lists it. */
const auditEntrySchema = z
  .object({
    id: z.string(),
    /** yyyy-MM-ddTHH:mm:ss.SSSZ, UTC. */
    at: z.string().meta({ description: 'When the change was made (UTC, ISO 8601 with milliseconds).' }),
    actor: z
      .object({
        userId: z.string(),
        name: z.string().nullable().meta({ description: "The member's name as it is now; null: the user is gone." }),
        via: z.enum(['token', 'session']),
        tokenPrefix: z.string().nullable().meta({
          description: 'The public prefix of the token it came with (never the token); null: a dashboard session.',
        }),
      })
      .meta({ description: 'Who made the change, and how they were signed in.' }),
    action: auditActionSchema,
    target: z.string().meta({ description: 'What was changed: a project URL, a webhook id, a token prefix, a user.' }),
    details: auditDetailsSchema.meta({
      description: 'What else there is to know (a field changed, a count); never a secret.',
    }),
  })
  .meta({ id: 'AuditEntry' });
export type AuditEntry = z.infer<typeof auditEntrySchema>;

/** `/v1/audit-log`'s answer: a page of the caller's organisation's entries, the newest first. */
export const auditLogPageSchema = z
  .object({
    entries: z.array(auditEntrySchema),
    next: z.string().optional().meta({
      description: 'Older entries remain: pass this as `before` for the next page.',
    }),
  })
  .meta({ id: 'AuditLogPage' });
export type AuditLogPage = z.infer<typeof auditLogPageSchema>;

import type { AuditAction, AuditDetails } from '@perfwatch/common';
import type { Caller } from '../http/auth.ts';
import type { AuditLogStore, NewAuditEntry } from './store/audit-log-store.ts';

export type { AuditDetails } from '@perfwatch/common';

/** One change as a route tells it: what happened, to what, and anything else worth knowing. */
export interface AuditRecord {
  action: AuditAction;
  /** What was changed: a project URL, a webhook id, a token's public prefix, a user's name. */
  target: string;
  /** Short names and plain values (a field changed, a count, a scope); never a secret's value. */
  details?: AuditDetails;
}

/**
 * The audit log of each organisation (issue 33): who changed what and when. A route records
 * an entry once its change has succeeded (a refused or failed write records nothing); the
 * entry goes to the caller's organisation, with the caller as its actor (their user, and the
 * public prefix of the token they came with). Entries are only ever added.
 */
export interface AuditLog {
  record(caller: Caller, entry: AuditRecord): Promise<void>;
}

/** Detail names that would hold a secret: a programming error, refused before anything is written. */
const SECRET_NAME = /secret|password|passphrase|digest|^token$|^value$/i;
const MAX_TARGET = 2048;
const MAX_DETAIL = 500;
const MAX_DETAILS = 20;

/** `details` as stored: no secret-sounding name, at most MAX_DETAILS of them, strings clipped. */
export function storedDetails(details: AuditDetails = {}): AuditDetails {
  const entries = Object.entries(details);
  if (entries.length > MAX_DETAILS) throw new Error(`an audit entry has at most ${MAX_DETAILS} details`);
  for (const [name] of entries)
    if (SECRET_NAME.test(name))
      throw new Error(`an audit entry's detail may not be named ${name}: it would hold a secret`);
  return Object.fromEntries(
    entries.map(([name, value]) => [name, typeof value === 'string' ? value.slice(0, MAX_DETAIL) : value]),
  );
}

/** The entry `caller`'s change makes, at `at`. */
export function auditEntry(caller: Caller, { action, target, details }: AuditRecord, at: Date): NewAuditEntry {
  return {
    orgId: caller.orgId,
    at,
    actor: {
      userId: caller.userId,
      via: caller.via.kind,
      tokenPrefix: caller.via.kind === 'token' ? caller.via.prefix : null,
    },
    action,
    target: target.slice(0, MAX_TARGET),
    details: storedDetails(details),
  };
}

/**
 * The audit log kept in the store. A write that fails fails the request (the change is made,
 * its answer is an error): a change the log could not record is never answered as done.
 */
export function createAuditLog({
  store,
  now = () => new Date(),
}: {
  store: Pick<AuditLogStore, 'appendAuditEntry'>;
  now?: () => Date;
}): AuditLog {
  return {
    async record(caller, entry) {
      await store.appendAuditEntry(auditEntry(caller, entry, now()));
    },
  };
}

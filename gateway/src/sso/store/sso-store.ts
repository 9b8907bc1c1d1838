import { z } from 'zod';
import type { StoredForms } from '../../store/record-forms.ts';

/**
 * A dashboard session (issue 33): made at an SSO sign-in, named by its cookie. Only the SHA-256
 * digest of the cookie's value is kept, so a copy of the database signs nobody in.
 */
export interface SessionRecord {
  /** SHA-256 of the session id (hex): the key it is found by. */
  digest: string;
  userId: string;
  /** The user's name, as the dashboard shows who is signed in. */
  userName: string;
  /** The organisation the dashboard acts in now, one of the user's. */
  orgId: string;
  /** What every request of the session must carry in X-CSRF-Token. */
  csrfToken: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Which perfwatch user an identity of an OpenID provider is: by issuer and subject, never by a claim that can change. */
export interface IdentityRecord {
  issuer: string;
  subject: string;
  userId: string;
  createdAt: Date;
}

/** Sessions of the dashboard's single sign-on, and the provider identities of users. */
export interface SsoStore {
  addSession(session: SessionRecord): Promise<void>;
  /** The session with this digest, expired or not (the caller decides). */
  findSession(digest: string): Promise<SessionRecord | null>;
  setSessionOrganisation(digest: string, orgId: string): Promise<boolean>;
  removeSession(digest: string): Promise<boolean>;
  /** Removes sessions that expired before `now`; how many. */
  removeExpiredSessions(now: Date): Promise<number>;

  findIdentity(issuer: string, subject: string): Promise<IdentityRecord | null>;
  /** The identity of `userId` at `issuer`, if the user has one there. */
  findUserIdentity(issuer: string, userId: string): Promise<IdentityRecord | null>;
  /** DuplicateError: the identity, or the user at this issuer, is linked already. */
  addIdentity(identity: IdentityRecord): Promise<void>;
}

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function ssoRecords({ id, time }: StoredForms) {
  const session = z.object({
    digest: z.string(),
    userId: id,
    userName: z.string(),
    orgId: id,
    csrfToken: z.string(),
    createdAt: time,
    expiresAt: time,
  }) satisfies z.ZodType<SessionRecord>;
  const identity = z.object({
    issuer: z.string(),
    subject: z.string(),
    userId: id,
    createdAt: time,
  }) satisfies z.ZodType<IdentityRecord>;
  return { session, identity };
}

import { z } from 'zod';
import { tokenScopeSchema, type TokenScope } from '@perfwatch/common';
import { ownId, type StoredForms } from '../../store/record-forms.ts';

export interface UserRecord {
  id: string;
  name: string;
  createdAt: Date;
}

export interface TokenRecord {
  prefix: string;
  /** The member it acts for. */
  userId: string;
  /** The organisation it acts in; tokens made before organisations: their user's own (the same id). */
  orgId: string;
  /** What it may do, within its member's role; tokens made before scopes: `admin`. */
  scope: TokenScope;
  /** A `ci` token's project URLs; null for every other scope. */
  projects: string[] | null;
  /** What its maker called it ("CI of the web app"); null: nothing. */
  label: string | null;
  digest: string;
  createdAt: Date;
  revokedAt: Date | null;
  /** When it stops being accepted; null: never (and tokens issued before expiry existed). */
  expiresAt: Date | null;
}

/** A token as issued: the store adds when, and that it is not revoked. */
export type NewToken = Pick<TokenRecord, 'prefix' | 'userId' | 'digest'> &
  Partial<Pick<TokenRecord, 'orgId' | 'scope' | 'projects' | 'label' | 'expiresAt'>>;

/** A new token's record: what it was given, with the defaults of a token made before scopes (its user's organisation, admin). */
export const newTokenRecord = (token: NewToken, createdAt: Date): TokenRecord => ({
  prefix: token.prefix,
  userId: token.userId,
  digest: token.digest,
  orgId: token.orgId ?? token.userId,
  scope: token.scope ?? 'admin',
  projects: token.scope === 'ci' ? (token.projects ?? []) : null,
  label: token.label ?? null,
  createdAt,
  revokedAt: null,
  expiresAt: token.expiresAt ?? null,
});

/** How a user is made: with an organisation of their own (the default), or without (single sign-on's users). */
export interface NewUserOptions {
  /** An organisation with the user's id and name, of which the user is the admin; default true. */
  ownOrganisation?: boolean;
}

/** Users and their API tokens (digests only). */
export interface AccountsStore {
  /** DuplicateError: the name is taken, by a user or (for a user with one of their own) by an organisation. */
  createUser(name: string, options?: NewUserOptions): Promise<UserRecord>;
  findUserByName(name: string): Promise<UserRecord | null>;
  listUsers(): Promise<UserRecord[]>;

  addToken(token: NewToken): Promise<void>;
  findToken(prefix: string): Promise<TokenRecord | null>;
  /** A user's tokens, revoked ones included, oldest first. */
  listTokens(userId: string): Promise<TokenRecord[]>;
  /** An organisation's tokens (every member's), revoked ones included, oldest first. */
  listOrganisationTokens(orgId: string): Promise<TokenRecord[]>;
  revokeToken(prefix: string): Promise<boolean>;
}

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function accountRecords(forms: StoredForms) {
  const { id, time } = forms;
  const user = z.object({ ...ownId(forms), name: z.string() }) satisfies z.ZodType<UserRecord>;
  const raw = z.object({
    prefix: z.string(),
    userId: id,
    // Absent on tokens made before organisations (their user's own organisation), scopes (admin) and labels.
    orgId: id.nullable().default(null),
    scope: tokenScopeSchema.nullable().default(null),
    projects: forms.structured(z.array(z.string())).nullable().default(null),
    label: z.string().nullable().default(null),
    digest: z.string(),
    createdAt: time,
    revokedAt: time.nullable(),
    // Absent on tokens issued before tokens could expire: they never do.
    expiresAt: time.nullable().default(null),
  });
  const token = raw.transform((t): TokenRecord => ({
    ...t,
    orgId: t.orgId ?? t.userId,
    scope: t.scope ?? 'admin',
  })) satisfies z.ZodType<TokenRecord>;
  return { user, token };
}

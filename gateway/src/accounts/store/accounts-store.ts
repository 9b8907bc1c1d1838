import { z } from 'zod';
import { ownId, type StoredForms } from '../../store/record-forms.ts';

export interface UserRecord {
  id: string;
  name: string;
  createdAt: Date;
}

export interface TokenRecord {
  prefix: string;
  userId: string;
  digest: string;
  createdAt: Date;
  revokedAt: Date | null;
  /** When it stops being accepted; null: never (and tokens issued before expiry existed). */
  expiresAt: Date | null;
}

/** A token as issued: the store adds when, and that it is not revoked. */
export type NewToken = Omit<TokenRecord, 'createdAt' | 'revokedAt' | 'expiresAt'> & { expiresAt?: Date | null };

/** Users and their API tokens (digests only). */
export interface AccountsStore {
  createUser(name: string): Promise<UserRecord>;
  findUserByName(name: string): Promise<UserRecord | null>;
  listUsers(): Promise<UserRecord[]>;

  addToken(token: NewToken): Promise<void>;
  findToken(prefix: string): Promise<TokenRecord | null>;
  /** A user's tokens, revoked ones included, oldest first. */
  listTokens(userId: string): Promise<TokenRecord[]>;
  revokeToken(prefix: string): Promise<boolean>;
}

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function accountRecords(forms: StoredForms) {
  const { id, time } = forms;
  const user = z.object({ ...ownId(forms), name: z.string() }) satisfies z.ZodType<UserRecord>;
  const token = z.object({
    prefix: z.string(),
    userId: id,
    digest: z.string(),
    createdAt: time,
    revokedAt: time.nullable(),
    // Absent on tokens issued before tokens could expire: they never do.
    expiresAt: time.nullable().default(null),
  }) satisfies z.ZodType<TokenRecord>;
  return { user, token };
}

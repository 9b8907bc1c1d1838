import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '@perfwatch/common';
import type { AccountsStore } from '../accounts/store/accounts-store.ts';
import { digestsEqual, hasExpired, tokenDigest, tokenFromHeader, tokenPrefix } from '../accounts/tokens.ts';

interface Caller {
  /** Whose request it is, whichever of the user's tokens it came with: what limits count by. */
  userId: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    caller?: Caller;
    requestId: string;
  }
}

/**
 * Checks the `Authorization` header: absent → 400 naming the header; anything that is not
 * a live token → 401. The token is looked up by its public prefix and its SHA-256 digest
 * compared in constant time; neither the token nor its digest is ever logged. A token past its
 * expiry is told so (401, "expired"), but only once it matched: a guess of a prefix learns nothing.
 */
export function authenticate(
  store: Pick<AccountsStore, 'findToken'>,
  onFailure: (req: Request) => Promise<void> = async () => undefined,
) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const header = req.get('authorization');
    if (header === undefined) {
      throw new ApiError('BAD_REQUEST', 'The Authorization header is missing.', [
        'header Authorization: required, holding the API token',
      ]);
    }
    const token = tokenFromHeader(header);
    const prefix = tokenPrefix(token);
    const record = prefix === null ? null : await store.findToken(prefix);
    if (!record || record.revokedAt !== null || !digestsEqual(tokenDigest(token), record.digest)) {
      await onFailure(req);
      throw new ApiError('UNAUTHORIZED', 'The API token is not valid.', [
        'header Authorization: unknown or revoked token',
      ]);
    }
    if (hasExpired(record, new Date())) {
      await onFailure(req);
      throw new ApiError('UNAUTHORIZED', 'The API token has expired.', [
        `header Authorization: the token expired at ${record.expiresAt!.toISOString()}; ask for a new one`,
      ]);
    }
    req.caller = { userId: record.userId };
    next();
  };
}

import type { AccountsStore } from './store/accounts-store.ts';

/**
 * Users' names by id, for the answers that show a member or a token's user by name. One read of
 * the users for a whole listing: /v1/tokens and /v1/members are an admin's pages, not a hot path.
 */
export async function userNames(store: Pick<AccountsStore, 'listUsers'>): Promise<Map<string, string>> {
  return new Map((await store.listUsers()).map((user) => [user.id, user.name]));
}

import type { Role } from '@perfwatch/common';
import type { AccountsStore, TokenRecord, UserRecord } from '../accounts/store/accounts-store.ts';
import { DuplicateError } from '../store/store.ts';
import { isLastAdmin } from '../teams/last-admin.ts';
import {
  ACCOUNT_NAME,
  type MembershipRecord,
  type OrganisationRecord,
  type TeamsStore,
} from '../teams/store/teams-store.ts';
import { AdminError } from './admin-error.ts';

/** Organisation names as user names are (a user's own organisation has their name). */

type TeamAdminStore = TeamsStore & Pick<AccountsStore, 'findUserByName' | 'listUsers' | 'listOrganisationTokens'>;

/** A member as the admin commands show them: by name. */
export interface MemberView {
  user: string;
  role: Role;
  source: MembershipRecord['source'];
  since: Date;
}

/** An organisation's token as listed: its user by name, never its digest. */
export type OrganisationTokenView = Omit<TokenRecord, 'digest'> & { user: string | null };

/**
 * Organisations and their members behind `perfwatch admin add-org`, `add-member`,
 * `remove-member`, `list-members` and `list-tokens`. An organisation keeps an admin, as
 * /v1/members has it: its last one is neither demoted nor removed.
 */
export class TeamAdmin {
  readonly #store: TeamAdminStore;

  constructor(store: TeamAdminStore) {
    this.#store = store;
  }

  async #organisationNamed(name: string): Promise<OrganisationRecord> {
    const organisation = await this.#store.findOrganisationByName(name);
    if (!organisation) throw new AdminError(`no organisation named ${JSON.stringify(name)}`);
    return organisation;
  }

  async #userNamed(name: string): Promise<UserRecord> {
    const user = await this.#store.findUserByName(name);
    if (!user) throw new AdminError(`no user named ${JSON.stringify(name)}`);
    return user;
  }

  async #names(): Promise<Map<string, string>> {
    return new Map((await this.#store.listUsers()).map((user) => [user.id, user.name]));
  }

  async addOrganisation(name: string): Promise<OrganisationRecord> {
    if (!ACCOUNT_NAME.test(name)) throw new AdminError('an organisation name has 1–100 letters, digits or . _ @ -');
    try {
      return await this.#store.createOrganisation({ name });
    } catch (error) {
      // A user's own organisation has their name: it is taken too.
      if (error instanceof DuplicateError) throw new AdminError(`an organisation is named ${JSON.stringify(name)}`);
      throw error;
    }
  }

  /** Adds `userName` to the organisation with `role`, or gives a member that role; `was`: their role before. */
  async setMember(orgName: string, userName: string, role: Role): Promise<{ was: Role | null }> {
    const organisation = await this.#organisationNamed(orgName);
    const user = await this.#userNamed(userName);
    const before = await this.#store.findMembership(organisation.id, user.id);
    if (before && before.role !== role) await this.#keepAnAdmin(organisation, user, 'demoted');
    // Given by an admin: it stays when the identity provider's groups no longer name it.
    await this.#store.setMembership({ orgId: organisation.id, userId: user.id, role, source: 'manual' });
    return { was: before?.role ?? null };
  }

  async removeMember(orgName: string, userName: string): Promise<void> {
    const organisation = await this.#organisationNamed(orgName);
    const user = await this.#userNamed(userName);
    await this.#keepAnAdmin(organisation, user, 'removed');
    if (!(await this.#store.removeMembership(organisation.id, user.id)))
      throw new AdminError(`${user.name} is not a member of ${organisation.name}`);
  }

  async #keepAnAdmin(organisation: OrganisationRecord, user: UserRecord, change: 'demoted' | 'removed') {
    if (isLastAdmin(await this.#store.listMembers(organisation.id), user.id))
      throw new AdminError(
        `${user.name} is the last admin of ${organisation.name} and cannot be ${change}; make another member admin first`,
      );
  }

  /** The organisation's members, oldest first. */
  async members(orgName: string): Promise<MemberView[]> {
    const organisation = await this.#organisationNamed(orgName);
    const [members, names] = await Promise.all([this.#store.listMembers(organisation.id), this.#names()]);
    return members.map(({ userId, role, source, createdAt }) => ({
      user: names.get(userId) ?? userId,
      role,
      source,
      since: createdAt,
    }));
  }

  /** Every token made in the organisation (by any member), revoked ones included, oldest first. */
  async tokens(orgName: string): Promise<OrganisationTokenView[]> {
    const organisation = await this.#organisationNamed(orgName);
    const [tokens, names] = await Promise.all([this.#store.listOrganisationTokens(organisation.id), this.#names()]);
    return tokens.map(({ digest: _digest, ...token }) => ({ ...token, user: names.get(token.userId) ?? null }));
  }
}

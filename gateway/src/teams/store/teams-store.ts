import { z } from 'zod';
import { roleSchema, type Role } from '@perfwatch/common';
import { ownId, type StoredForms } from '../../store/record-forms.ts';

/**
 * An organisation owns projects, updates, webhooks and everything else a record keys by its
 * `userId`: that field holds the owning organisation's id. The migration gives every user an
 * organisation with the user's own id and name, of which the user is the admin, so records
 * written before organisations existed belong to it unchanged.
 */
export interface OrganisationRecord {
  id: string;
  name: string;
  createdAt: Date;
}

/**
 * What a user's or an organisation's name may be: they share one name space (a user's own
 * organisation has the user's name), whoever makes it (the admin CLI, single sign-on's groups).
 */
export const ACCOUNT_NAME = /^[A-Za-z0-9._@-]{1,100}$/;

/** Where a membership came from: given by an admin (API, CLI), or by the identity provider's claim at sign-in. */
type MembershipSource = 'manual' | 'sso';

export interface MembershipRecord {
  orgId: string;
  userId: string;
  role: Role;
  source: MembershipSource;
  createdAt: Date;
}

export type NewMembership = Omit<MembershipRecord, 'createdAt'>;

/** Organisations and who belongs to them with which role. */
export interface TeamsStore {
  /** A new organisation; `id` given only for a user's own (its id is the user's). DuplicateError: the name is taken. */
  createOrganisation(organisation: { name: string; id?: string }): Promise<OrganisationRecord>;
  findOrganisation(id: string): Promise<OrganisationRecord | null>;
  findOrganisationByName(name: string): Promise<OrganisationRecord | null>;
  listOrganisations(): Promise<OrganisationRecord[]>;

  /** Adds the membership, or changes its role and source (one membership per user and organisation). */
  setMembership(membership: NewMembership): Promise<void>;
  findMembership(orgId: string, userId: string): Promise<MembershipRecord | null>;
  /** An organisation's members, oldest first. */
  listMembers(orgId: string): Promise<MembershipRecord[]>;
  /** A user's memberships, oldest first. */
  listMemberships(userId: string): Promise<MembershipRecord[]>;
  /**
   * Ends the membership and revokes the member's tokens in that organisation, so taking them back
   * later does not bring old tokens back to life.
   */
  removeMembership(orgId: string, userId: string): Promise<boolean>;
}

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function teamRecords(forms: StoredForms) {
  const { id, time } = forms;
  const organisation = z.object({ ...ownId(forms), name: z.string() }) satisfies z.ZodType<OrganisationRecord>;
  const membership = z.object({
    orgId: id,
    userId: id,
    role: roleSchema,
    source: z.enum(['manual', 'sso']),
    createdAt: time,
  }) satisfies z.ZodType<MembershipRecord>;
  return { organisation, membership };
}

import { ROLES, roleAtLeast, type Role } from '@perfwatch/common';
import { ACCOUNT_NAME, type MembershipRecord, type NewMembership } from '../teams/store/teams-store.ts';

/** A membership a provider's groups claim gives: an organisation by its name, and a role in it. */
export interface ClaimedMembership {
  organisation: string;
  role: Role;
}

const roleNamed = (text: string): Role | null => {
  const role = text.trim().toLowerCase();
  return (ROLES as readonly string[]).includes(role) ? (role as Role) : null;
};

/**
 * What a groups claim gives: each group `<prefix><organisation>:<role>` one membership; a user in
 * several groups of one organisation has the highest of their roles. Other groups, and anything
 * that is not a list of strings (or one string, as some providers send a single group or several
 * apart by spaces or commas), give nothing; so does a name an organisation cannot have.
 */
export function membershipsFromGroups(claim: unknown, prefix: string): ClaimedMembership[] {
  const groups = typeof claim === 'string' ? claim.split(/[\s,]+/) : Array.isArray(claim) ? claim : [];
  const roles = new Map<string, Role>();
  for (const group of groups) {
    if (typeof group !== 'string' || !group.startsWith(prefix)) continue;
    const rest = group.slice(prefix.length);
    // The role is after the last colon: an organisation's name may hold one itself.
    const colon = rest.lastIndexOf(':');
    const organisation = rest.slice(0, Math.max(colon, 0)).trim();
    const role = roleNamed(rest.slice(colon + 1));
    if (colon < 1 || !role || !ACCOUNT_NAME.test(organisation)) continue;
    const held = roles.get(organisation);
    if (!held || !roleAtLeast(held, role)) roles.set(organisation, role);
  }
  return [...roles].map(([organisation, role]) => ({ organisation, role }));
}

/**
 * How a user's memberships follow the claim at sign-in: each claimed organisation gets the
 * claimed role (source `sso`), memberships that came from the provider and are no longer claimed
 * end, and those an admin gave by hand stay as they are.
 */
export function membershipChanges(
  userId: string,
  claimed: ReadonlyArray<{ orgId: string; role: Role }>,
  current: readonly MembershipRecord[],
): { set: NewMembership[]; remove: string[] } {
  const held = new Map(current.map((membership) => [membership.orgId, membership]));
  const set = claimed
    .filter(({ orgId, role }) => {
      const membership = held.get(orgId);
      return !membership || (membership.source === 'sso' && membership.role !== role);
    })
    .map(({ orgId, role }): NewMembership => ({ orgId, userId, role, source: 'sso' }));
  const claimedIds = new Set(claimed.map(({ orgId }) => orgId));
  const remove = current.filter((m) => m.source === 'sso' && !claimedIds.has(m.orgId)).map((m) => m.orgId);
  return { set, remove };
}

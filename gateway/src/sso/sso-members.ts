import type { Role } from '@perfwatch/common';
import type { AccountsStore } from '../accounts/store/accounts-store.ts';
import type { AuditLog, AuditRecord } from '../audit-log/audit-log.ts';
import { DuplicateError } from '../store/store.ts';
import type { MembershipRecord, TeamsStore } from '../teams/store/teams-store.ts';
import { membershipChanges, membershipsFromGroups, type ClaimedMembership } from './group-memberships.ts';
import type { OidcIdentity } from './oidc-client.ts';
import type { SsoStore } from './store/sso-store.ts';

/** What a sign-in reads and writes: identities, users, organisations and memberships. */
export type SsoMembersStore = Pick<SsoStore, 'findIdentity' | 'findUserIdentity' | 'addIdentity'> &
  Pick<AccountsStore, 'createUser' | 'findUserByName'> &
  Pick<
    TeamsStore,
    'createOrganisation' | 'findOrganisationByName' | 'setMembership' | 'listMemberships' | 'removeMembership'
  >;

export type SignedInMember =
  | {
      ok: true;
      userId: string;
      /** Who it is as the provider names them now (the session shows it). */
      name: string;
      /** Never empty. */
      memberships: MembershipRecord[];
    }
  | { ok: false; reason: string };

/** What the provider's groups changed, for each organisation's audit log: the user's own doing, by single sign-on. */
type Changed = (orgId: string, role: Role, entry: AuditRecord) => Promise<void>;

/**
 * The perfwatch user an identity is, with the memberships its groups claim gives (made or
 * brought up to date at every sign-in, each change in its organisation's audit log). Refused,
 * without a user being made, when the claim names no perfwatch group: a provider serves more apps
 * than this one.
 */
export async function signInMember(
  store: SsoMembersStore,
  identity: OidcIdentity,
  { groupsClaim, groupPrefix }: { groupsClaim: string; groupPrefix: string },
  audit?: AuditLog,
): Promise<SignedInMember> {
  const claim = identity.claims[groupsClaim];
  // A claim of another shape (an object, a number) is a provider misconfigured, not a user in no
  // group: refused, with nobody's memberships changed.
  if (claim !== undefined && typeof claim !== 'string' && !Array.isArray(claim))
    return {
      ok: false,
      reason: `The identity provider's ${groupsClaim} claim is not a list of groups: ask its admins.`,
    };
  const claimed = membershipsFromGroups(claim, groupPrefix);
  const linked = await store.findIdentity(identity.issuer, identity.subject);
  const { name } = userName(identity.claims, identity.subject);
  const changed =
    (userId: string): Changed =>
    async (orgId, role, entry) =>
      audit?.record({ orgId, userId, role, projects: null, via: { kind: 'session' } }, entry);
  if (claimed.length === 0) {
    // Someone taken out of every perfwatch group loses what the groups gave, tokens included.
    if (linked) await followClaim(store, { userId: linked.userId, name }, [], changed(linked.userId));
    return {
      ok: false,
      reason: `Your account is in no perfwatch group: ask for a group named ${groupPrefix}<organisation>:<viewer|editor|admin>.`,
    };
  }
  let userId = linked?.userId;
  if (!userId) {
    const user = await userFor(store, identity);
    if (!user.ok) return user;
    userId = user.userId;
  }
  const memberships = await followClaim(store, { userId, name }, claimed, changed(userId));
  // Each claimed organisation holds one now; checked so that a session never lacks an organisation.
  if (memberships.length === 0) return { ok: false, reason: 'You are a member of no perfwatch organisation.' };
  return { ok: true, userId, name, memberships };
}

/** The name a new user gets: the email the provider vouches for, else the username it gives, else the subject. */
export function userName(claims: Record<string, unknown>, subject: string): { name: string; verifiedEmail: boolean } {
  const { email, email_verified: verified, preferred_username: username } = claims;
  if (typeof email === 'string' && email !== '' && verified !== false)
    return { name: email, verifiedEmail: verified === true };
  if (typeof username === 'string' && username !== '') return { name: username, verifiedEmail: false };
  return { name: subject, verifiedEmail: false };
}

/**
 * A user for an identity signing in the first time: a new one without an organisation of its own
 * (the groups give its organisations), or the existing user of that name when the name is an
 * email the provider verified and that user has no identity at this provider yet (users an
 * operator made before SSO was set up). Linked by issuer and subject from then on.
 */
async function userFor(
  store: SsoMembersStore,
  identity: OidcIdentity,
): Promise<{ ok: true; userId: string } | { ok: false; reason: string }> {
  const { name, verifiedEmail } = userName(identity.claims, identity.subject);
  const taken = `A perfwatch user named ${name} exists already and is not this account: an operator can help.`;
  let userId: string;
  try {
    userId = (await store.createUser(name, { ownOrganisation: false })).id;
  } catch (error) {
    if (!(error instanceof DuplicateError)) throw error;
    const existing = await store.findUserByName(name);
    if (!existing || !verifiedEmail || (await store.findUserIdentity(identity.issuer, existing.id)))
      return { ok: false, reason: taken };
    userId = existing.id;
  }
  try {
    await store.addIdentity({ issuer: identity.issuer, subject: identity.subject, userId, createdAt: new Date() });
  } catch (error) {
    // Two first sign-ins of one identity at once: the other linked it.
    if (!(error instanceof DuplicateError)) throw error;
    const linked = await store.findIdentity(identity.issuer, identity.subject);
    if (!linked) return { ok: false, reason: taken };
    userId = linked.userId;
  }
  return { ok: true, userId };
}

/** Brings the user's memberships to what is claimed (group-memberships.ts); their memberships after. */
async function followClaim(
  store: SsoMembersStore,
  { userId, name }: { userId: string; name: string },
  claimed: readonly ClaimedMembership[],
  changed: Changed,
): Promise<MembershipRecord[]> {
  const looked = await Promise.all(
    claimed.map(async (claim) => {
      const organisation = await organisationId(store, claim.organisation);
      return organisation && { ...claim, ...organisation };
    }),
  );
  const found = looked.filter((claim) => claim !== null);
  for (const { id, organisation, role, made } of found)
    if (made) await changed(id, role, { action: 'organisation.created', target: organisation, details: SSO });
  const current = await store.listMemberships(userId);
  const was = new Map(current.map((membership) => [membership.orgId, membership.role]));
  const withIds = found.map(({ id, role }) => ({ orgId: id, role }));
  const { set, remove } = membershipChanges(userId, withIds, current);
  for (const { orgId, role } of set) {
    await store.setMembership({ orgId, userId, role, source: 'sso' });
    const before = was.get(orgId);
    await changed(orgId, role, {
      action: before ? 'member.changed' : 'member.added',
      target: name,
      details: before ? { role, was: before, ...SSO } : { role, ...SSO },
    });
  }
  for (const orgId of remove) {
    await store.removeMembership(orgId, userId);
    const role = was.get(orgId)!;
    await changed(orgId, role, { action: 'member.removed', target: name, details: { role, ...SSO } });
  }
  return store.listMemberships(userId);
}

const SSO = { source: 'sso' } as const;

/**
 * The organisation named so, made if there is none yet; null for a user's own organisation (its
 * id is its user's), which only its user and the members they add belong to: a group in the
 * provider naming it must not make anyone its member.
 */
async function organisationId(store: SsoMembersStore, name: string): Promise<{ id: string; made: boolean } | null> {
  const found = await store.findOrganisationByName(name);
  if (found) return (await store.findUserByName(name))?.id === found.id ? null : { id: found.id, made: false };
  try {
    return { id: (await store.createOrganisation({ name })).id, made: true };
  } catch (error) {
    // Made by a sign-in at the same moment.
    const made = error instanceof DuplicateError ? await store.findOrganisationByName(name) : null;
    if (!made) throw error;
    return { id: made.id, made: false };
  }
}

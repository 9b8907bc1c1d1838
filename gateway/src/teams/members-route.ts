import type { Request, Response } from 'express';
import {
  API_ENDPOINTS,
  ApiError,
  type ApiAnswer,
  type MembersParams,
  type MemberView,
  type Role,
} from '@perfwatch/common';
import type { AccountsStore, UserRecord } from '../accounts/store/accounts-store.ts';
import { userNames } from '../accounts/user-names.ts';
import type { AuditLog } from '../audit-log/audit-log.ts';
import type { Caller } from '../http/auth.ts';
import { parseRequest } from '../http/parse-request.ts';
import { isLastAdmin } from './last-admin.ts';
import type { MembershipRecord, TeamsStore } from './store/teams-store.ts';

type MembersRouteStore = Pick<TeamsStore, 'listMembers' | 'findMembership' | 'setMembership' | 'removeMembership'> &
  Pick<AccountsStore, 'findUserByName' | 'listUsers'>;

interface MembersRouteDeps {
  store: MembersRouteStore;
  audit: AuditLog;
}

const viewOf = ({ role, source, createdAt }: MembershipRecord, user: string): MemberView => ({
  user,
  role,
  source,
  since: createdAt.toISOString(),
});

/**
 * `/v1/members`: the caller's organisation's members (GET), a user added or given a role (PUT
 * {user, role}), a member removed (DELETE ?user=). An organisation keeps an admin: removing or
 * demoting its last one is refused (409), so nobody can lock everyone out of its members and tokens.
 */
export function membersRoute(deps: MembersRouteDeps) {
  return async (req: Request, res: Response): Promise<void> => {
    const params: MembersParams = parseRequest(req, API_ENDPOINTS.members);
    const caller = req.caller!;
    let answer: ApiAnswer<'members'>;
    if (params.action === 'set') answer = await setMember(deps, caller, params.user, params.role);
    else if (params.action === 'remove') answer = await removeMember(deps, caller, params.user);
    else {
      const [members, names] = await Promise.all([deps.store.listMembers(caller.orgId), userNames(deps.store)]);
      answer = { members: members.map((member) => viewOf(member, names.get(member.userId) ?? member.userId)) };
    }
    res.json(answer);
  };
}

async function setMember({ store, audit }: MembersRouteDeps, caller: Caller, name: string, role: Role) {
  const user = await userNamed(store, name);
  const before = await store.findMembership(caller.orgId, user.id);
  if (before?.role === role) return { member: viewOf(before, user.name), added: false };
  if (before?.role === 'admin') await keepAnAdmin(store, caller.orgId, user, 'demoted');
  // Given by an admin: it stays when the identity provider's groups no longer name it.
  await store.setMembership({ orgId: caller.orgId, userId: user.id, role, source: 'manual' });
  await audit.record(caller, {
    action: before ? 'member.changed' : 'member.added',
    target: user.name,
    details: before ? { role, was: before.role } : { role },
  });
  const member = (await store.findMembership(caller.orgId, user.id))!;
  return { member: viewOf(member, user.name), added: before === null };
}

async function removeMember({ store, audit }: MembersRouteDeps, caller: Caller, name: string) {
  const user = await userNamed(store, name);
  const member = await store.findMembership(caller.orgId, user.id);
  if (!member)
    throw new ApiError('NOT_FOUND', 'Member not found.', [`user: ${user.name} is not a member of this organisation`]);
  if (member.role === 'admin') await keepAnAdmin(store, caller.orgId, user, 'removed');
  if (await store.removeMembership(caller.orgId, user.id))
    await audit.record(caller, { action: 'member.removed', target: user.name, details: { role: member.role } });
  return { user: user.name, removed: true as const };
}

async function userNamed(store: Pick<AccountsStore, 'findUserByName'>, name: string): Promise<UserRecord> {
  const user = await store.findUserByName(name);
  if (!user) throw new ApiError('NOT_FOUND', 'User not found.', [`user: no user is named ${name}`]);
  return user;
}

/** 409 when `user` is the organisation's only admin. */
async function keepAnAdmin(
  store: Pick<TeamsStore, 'listMembers'>,
  orgId: string,
  user: UserRecord,
  change: 'demoted' | 'removed',
): Promise<void> {
  if (!isLastAdmin(await store.listMembers(orgId), user.id)) return;
  throw new ApiError('CONFLICT', 'An organisation keeps at least one admin.', [
    `user: ${user.name} is the last admin of this organisation and cannot be ${change}; make another member admin first`,
  ]);
}

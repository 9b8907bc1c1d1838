import { ROLES, type Role } from '@perfwatch/common';
import { adminCommand } from './admin-command.ts';
import { AdminError } from './admin-error.ts';
import { grantOf, tokenJson, tokenState } from './token-commands.ts';

const isRole = (text: string): text is Role => (ROLES as readonly string[]).includes(text);

export const addOrg = adminCommand({
  synopsis: 'NAME',
  summary: ['add an organisation (no members yet: add its first admin with add-member)'],
  args: 1,
  run: async ({ admin, args, values, out }) => {
    const organisation = await admin.teams.addOrganisation(args[0]!);
    out.write(
      values.json
        ? `${JSON.stringify({ id: organisation.id, name: organisation.name, createdAt: organisation.createdAt })}\n`
        : `organisation ${organisation.name} added; its first admin: perfwatch admin add-member ${organisation.name} USER --role admin\n`,
    );
  },
});

export const addMember = adminCommand({
  synopsis: 'ORG USER --role viewer|editor|admin',
  summary: ["add USER to ORG, or change their role there (not ORG's last admin's)"],
  args: 2,
  run: async ({ admin, args, values, out }) => {
    const [org, user] = [args[0]!, args[1]!];
    const role = values.role;
    if (role === undefined || !isRole(role))
      throw new AdminError(`--role is ${ROLES.join(', ')}${role === undefined ? '' : `; not ${JSON.stringify(role)}`}`);
    const { was } = await admin.teams.setMember(org, user, role);
    out.write(
      was === null
        ? `${user} added to ${org} as ${role}\n`
        : was === role
          ? `${user} is ${role} of ${org} already\n`
          : `${user} is now ${role} of ${org} (was ${was})\n`,
    );
  },
});

export const removeMember = adminCommand({
  synopsis: 'ORG USER',
  summary: ["take USER out of ORG (not ORG's last admin); their tokens there stop working"],
  args: 2,
  run: async ({ admin, args, out }) => {
    await admin.teams.removeMember(args[0]!, args[1]!);
    out.write(`${args[1]} removed from ${args[0]}\n`);
  },
});

export const listMembers = adminCommand({
  synopsis: 'ORG [--json]',
  summary: ["ORG's members with their roles, oldest first"],
  args: 1,
  run: async ({ admin, args, values, out }) => {
    const members = await admin.teams.members(args[0]!);
    if (values.json)
      return void out.write(`${JSON.stringify(members.map((m) => ({ ...m, since: m.since.toISOString() })))}\n`);
    if (members.length === 0) out.write(`${args[0]} has no members\n`);
    for (const m of members) out.write(`${m.user}  ${m.role}  (${m.source}, since ${m.since.toISOString()})\n`);
  },
});

export const listTokens = adminCommand({
  synopsis: 'ORG [--json]',
  summary: ["the tokens made in ORG (every member's): user, scope, label, expiry"],
  args: 1,
  run: async ({ admin, args, values, out }) => {
    const tokens = await admin.teams.tokens(args[0]!);
    const now = new Date();
    if (values.json) return void out.write(`${JSON.stringify(tokens.map(tokenJson(now)))}\n`);
    if (tokens.length === 0) out.write(`${args[0]} has no tokens\n`);
    for (const t of tokens)
      out.write(
        `token ${t.prefix}  ${t.user ?? t.userId}  created ${t.createdAt.toISOString()}  ${tokenState(t, now)}  ${grantOf(t)}\n`,
      );
  },
});

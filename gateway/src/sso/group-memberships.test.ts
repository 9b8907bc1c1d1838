import { describe, expect, it } from 'vitest';
import type { MembershipRecord } from '../teams/store/teams-store.ts';
import { membershipChanges, membershipsFromGroups } from './group-memberships.ts';

const PREFIX = 'perfwatch:';

describe('membershipsFromGroups', () => {
  it('gives a membership per prefixed group, and ignores every other group', () => {
    const claim = ['perfwatch:web-team:editor', 'perfwatch:sre:viewer', 'staff', 'other:web-team:admin'];
    expect(membershipsFromGroups(claim, PREFIX)).toEqual([
      { organisation: 'web-team', role: 'editor' },
      { organisation: 'sre', role: 'viewer' },
    ]);
  });

  it('keeps the highest role of several groups of one organisation, whatever their order', () => {
    const claim = ['perfwatch:web:admin', 'perfwatch:web:viewer', 'perfwatch:web:editor'];
    expect(membershipsFromGroups(claim, PREFIX)).toEqual([{ organisation: 'web', role: 'admin' }]);
    expect(membershipsFromGroups([...claim].reverse(), PREFIX)).toEqual([{ organisation: 'web', role: 'admin' }]);
  });

  it('reads the role after the last colon, and gives nothing for a name no organisation can have', () => {
    expect(membershipsFromGroups(['perfwatch:acme-eu:Viewer'], PREFIX)).toEqual([
      { organisation: 'acme-eu', role: 'viewer' },
    ]);
    // Organisations are named as users are (the admin CLI's rule): no colon, space or slash.
    expect(
      membershipsFromGroups(['perfwatch:acme:eu:viewer', 'perfwatch:a b:admin', 'perfwatch:a/b:admin'], PREFIX),
    ).toEqual([]);
  });

  it('gives nothing for unknown roles, empty or overlong names, and claims that are no list of strings', () => {
    const bad = ['perfwatch:web:owner', 'perfwatch::admin', 'perfwatch:admin', `perfwatch:${'x'.repeat(101)}:admin`];
    expect(membershipsFromGroups(bad, PREFIX)).toEqual([]);
    for (const claim of [undefined, null, 42, { web: 'admin' }, [7, null]])
      expect(membershipsFromGroups(claim, PREFIX)).toEqual([]);
  });

  it('takes groups sent as one string, and a prefix of the operator’s choice', () => {
    expect(membershipsFromGroups('/perfwatch/shop:admin', '/perfwatch/')).toEqual([
      { organisation: 'shop', role: 'admin' },
    ]);
    // Several in one string, as some providers send them: each its own group, not one strange name.
    expect(membershipsFromGroups('perfwatch:a:admin perfwatch:b:viewer,perfwatch:c:editor', PREFIX)).toEqual([
      { organisation: 'a', role: 'admin' },
      { organisation: 'b', role: 'viewer' },
      { organisation: 'c', role: 'editor' },
    ]);
  });
});

const membership = (orgId: string, role: MembershipRecord['role'], source: MembershipRecord['source']) => ({
  orgId,
  userId: 'u1',
  role,
  source,
  createdAt: new Date(0),
});

describe('membershipChanges', () => {
  it('adds claimed memberships, changes a claimed role, and ends provider memberships no longer claimed', () => {
    const current = [
      membership('a', 'viewer', 'sso'),
      membership('b', 'admin', 'sso'),
      membership('c', 'editor', 'sso'),
    ];
    const claimed = [
      { orgId: 'a', role: 'editor' as const },
      { orgId: 'b', role: 'admin' as const },
      { orgId: 'd', role: 'viewer' as const },
    ];
    expect(membershipChanges('u1', claimed, current)).toEqual({
      set: [
        { orgId: 'a', userId: 'u1', role: 'editor', source: 'sso' },
        { orgId: 'd', userId: 'u1', role: 'viewer', source: 'sso' },
      ],
      remove: ['c'],
    });
  });

  it('leaves memberships an admin gave by hand as they are, claimed or not', () => {
    const current = [membership('own', 'admin', 'manual'), membership('web', 'admin', 'manual')];
    expect(membershipChanges('u1', [{ orgId: 'web', role: 'viewer' }], current)).toEqual({ set: [], remove: [] });
  });

  it('ends every provider membership when nothing is claimed', () => {
    const current = [membership('a', 'viewer', 'sso'), membership('own', 'admin', 'manual')];
    expect(membershipChanges('u1', [], current)).toEqual({ set: [], remove: ['a'] });
  });
});

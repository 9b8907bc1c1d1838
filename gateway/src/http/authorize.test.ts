import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import type { Role } from '@perfwatch/common';
import type { Caller } from './auth.ts';
import { refusal, writes, type Access } from './authorize.ts';

const member = (role: Role): Caller => ({
  orgId: 'o',
  userId: 'u',
  role,
  projects: null,
  via: { kind: 'session' },
});
const ciToken: Caller = {
  orgId: 'o',
  userId: 'u',
  role: 'editor',
  projects: ['https://shop.example/'],
  via: { kind: 'token', prefix: 'abcdefgh', scope: 'ci' },
};
const request = (method: string, given: unknown): Request =>
  ({ method, body: method === 'POST' ? given : undefined, query: method === 'GET' ? given : {} }) as Request;

const budgets: Access = { read: 'viewer', write: 'editor', ci: 'read' };
const annotations: Access = { read: 'viewer', write: 'editor', ci: 'write' };
const credentials: Access = { read: 'viewer', write: 'admin' };

describe('writes', () => {
  it('counts PUT, PATCH and DELETE, a parameter the contract marks as writing, and what the endpoint says', () => {
    const contract = { writes: ['limits'] as const };
    expect(writes(contract, budgets, request('GET', { url: 'x' }))).toBe(false);
    expect(writes(contract, budgets, request('POST', { url: 'x' }))).toBe(false);
    expect(writes(contract, budgets, request('POST', { url: 'x', limits: {} }))).toBe(true);
    // A GET naming a writing parameter is a write too (the route then refuses it with 405).
    expect(writes(contract, budgets, request('GET', { limits: 'x' }))).toBe(true);
    for (const method of ['PUT', 'PATCH', 'DELETE']) expect(writes({}, budgets, request(method, {}))).toBe(true);
    expect(writes({}, { ...budgets, isWrite: () => true }, request('GET', {}))).toBe(true);
    // A body that is not an object writes nothing by its keys.
    expect(writes(contract, budgets, request('POST', ['limits']))).toBe(false);
  });
});

describe('refusal', () => {
  it('lets each role do what it holds and names the role needed otherwise', () => {
    expect(refusal(member('viewer'), budgets, false)).toBeNull();
    expect(refusal(member('viewer'), budgets, true)).toBe('changing this needs the editor role; you have viewer');
    expect(refusal(member('editor'), budgets, true)).toBeNull();
    expect(refusal(member('editor'), credentials, true)).toMatch(/needs the admin role/);
    expect(refusal(member('admin'), credentials, true)).toBeNull();
    expect(refusal({ ...member('viewer'), via: { kind: 'token', prefix: 'p', scope: 'read' } }, budgets, true)).toBe(
      'changing this needs the editor role; this token has viewer',
    );
  });

  it("holds a ci token to the endpoints that say what it may do there, whatever its member's role", () => {
    expect(refusal(ciToken, budgets, false)).toBeNull();
    expect(refusal(ciToken, budgets, true)).toMatch(/may read this, not change it/);
    expect(refusal(ciToken, annotations, true)).toBeNull();
    expect(refusal(ciToken, credentials, false)).toMatch(/nothing else/);
    expect(refusal({ ...ciToken, role: 'admin' }, credentials, true)).toMatch(/nothing else/);
    // Its member demoted to viewer: the token's writes go with the role.
    expect(refusal({ ...ciToken, role: 'viewer' }, annotations, true)).toBe(
      'changing this needs the editor role; this token has viewer',
    );
    expect(refusal({ ...ciToken, role: 'viewer' }, annotations, false)).toBeNull();
  });
});

import { z } from 'zod';

/**
 * Who may do what in an organisation (issue 33). A member's role: `viewer` reads; `editor`
 * also changes projects, budgets, annotations and webhooks and runs updates; `admin` also
 * manages members, tokens, credentials, repository links and the organisation. Each role holds
 * everything of the roles before it.
 */
export const ROLES = ['viewer', 'editor', 'admin'] as const;
export const roleSchema = z.enum(ROLES).meta({ id: 'Role' });
export type Role = z.infer<typeof roleSchema>;

/**
 * What a token may do: `read` (a viewer's reads), `ci` (run updates and annotate the projects it
 * lists, read those projects; nothing else), `editor` or `admin` (that role). A token never
 * does more than its member's role: an editor's `admin` token is an editor's.
 */
export const TOKEN_SCOPES = ['read', 'ci', 'editor', 'admin'] as const;
export const tokenScopeSchema = z.enum(TOKEN_SCOPES).meta({ id: 'TokenScope' });
export type TokenScope = z.infer<typeof tokenScopeSchema>;

const RANK: Record<Role, number> = { viewer: 0, editor: 1, admin: 2 };

/** Whether `role` holds everything `needed` does. */
export const roleAtLeast = (role: Role, needed: Role): boolean => RANK[role] >= RANK[needed];

/** The lesser of two roles. */
export const lesserRole = (a: Role, b: Role): Role => (RANK[a] <= RANK[b] ? a : b);

/** The role a scope stands for; `ci` is an editor's, held to its projects and its two writes. */
export const scopeRole = (scope: TokenScope): Role => (scope === 'read' ? 'viewer' : scope === 'ci' ? 'editor' : scope);

/** The scopes a member of `role` may give a token: none above their own role. */
export const scopesWithin = (role: Role): TokenScope[] =>
  TOKEN_SCOPES.filter((scope) => roleAtLeast(role, scopeRole(scope)));

import { normalizeProjectUrl, scopeRole, scopesWithin, type Role, type TokenScope } from '@perfwatch/common';
import type { AccountsStore, NewToken, UserRecord } from '../accounts/store/accounts-store.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { OrganisationRecord, TeamsStore } from '../teams/store/teams-store.ts';
import { AdminError } from './admin-error.ts';

/** Labels as long as /v1/tokens takes them. */
const MAX_LABEL_LENGTH = 200;

/** What a token is asked for with: its organisation (by name; none: the user's own), scope, ci projects, label. */
export interface TokenGrantOptions {
  org?: string;
  scope?: TokenScope;
  projects?: readonly string[];
  label?: string;
}

/** What a token acts as: where, with which scope, on which projects (ci), under which label. */
export type TokenGrant = Required<Pick<NewToken, 'orgId' | 'scope' | 'projects' | 'label'>> & {
  organisation: OrganisationRecord;
};

type GrantStore = Pick<TeamsStore, 'findOrganisation' | 'findOrganisationByName' | 'findMembership'> &
  Pick<ProjectsStore, 'findProject'> &
  Pick<AccountsStore, 'findUserByName'>;

/** A member's widest scope: a token given none does all its member's role does. */
const ROLE_SCOPE: Record<Role, TokenScope> = { viewer: 'read', editor: 'editor', admin: 'admin' };

async function organisationOf(store: GrantStore, user: UserRecord, name: string | undefined) {
  const organisation =
    name === undefined ? await store.findOrganisation(user.id) : await store.findOrganisationByName(name);
  if (organisation) return organisation;
  throw new AdminError(
    name === undefined
      ? `${user.name} has no organisation of their own: name one with --org`
      : `no organisation named ${JSON.stringify(name)}`,
  );
}

/** A ci token's projects, each a project of `organisation` (as stored: normalised); null for any other scope. */
async function projectsOf(
  store: GrantStore,
  organisation: OrganisationRecord,
  scope: TokenScope,
  given: readonly string[] | undefined,
): Promise<string[] | null> {
  if (scope !== 'ci') {
    if (given !== undefined) throw new AdminError('--projects goes with --scope ci only');
    return null;
  }
  if (given === undefined || given.length === 0)
    throw new AdminError('a ci token measures the projects it lists: give --projects URL,URL');
  const urls: string[] = [];
  for (const url of given) {
    const normalized = normalizeProjectUrl(url) ?? url;
    if (!(await store.findProject(organisation.id, normalized)))
      throw new AdminError(`${organisation.name} has no project at ${normalized}`);
    if (!urls.includes(normalized)) urls.push(normalized);
  }
  return urls;
}

/**
 * What a token of `user` may be, by the rules /v1/tokens keeps too: made in an organisation the
 * user is a member of, with a scope no wider than their role there, a ci token for projects of
 * that organisation only. AdminError naming what is wrong otherwise.
 */
export async function tokenGrant(store: GrantStore, user: UserRecord, options: TokenGrantOptions): Promise<TokenGrant> {
  const organisation = await organisationOf(store, user, options.org);
  const membership = await store.findMembership(organisation.id, user.id);
  if (!membership) throw new AdminError(`${user.name} is not a member of ${organisation.name}`);
  const scope = options.scope ?? ROLE_SCOPE[membership.role];
  if (!scopesWithin(membership.role).includes(scope))
    throw new AdminError(
      `a ${scope} token needs the ${scopeRole(scope)} role; ${user.name} is ${membership.role} of ${organisation.name}`,
    );
  if (options.label !== undefined && options.label.length > MAX_LABEL_LENGTH)
    throw new AdminError(`--label is longer than ${MAX_LABEL_LENGTH} characters`);
  return {
    organisation,
    orgId: organisation.id,
    scope,
    projects: await projectsOf(store, organisation, scope, options.projects),
    label: options.label ?? null,
  };
}

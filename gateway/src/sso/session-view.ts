import type { Role } from '@perfwatch/common';
import type { TeamsStore } from '../teams/store/teams-store.ts';
import type { SessionRecord } from './store/sso-store.ts';

/** What GET /auth/session answers: whether SSO is on, and who is signed in with what. */
export type SessionView =
  | { sso: boolean; signedIn: false }
  | {
      sso: true;
      signedIn: true;
      user: { id: string; name: string };
      /** The organisation requests act in now. */
      organisation: string;
      organisations: Array<{ id: string; name: string; role: Role }>;
      /** What every request of the session carries in X-CSRF-Token. */
      csrfToken: string;
      expiresAt: string;
    };

/** The session's user and their organisations with their roles, oldest membership first. */
export async function sessionView(
  store: Pick<TeamsStore, 'listMemberships' | 'findOrganisation'>,
  session: SessionRecord,
): Promise<SessionView> {
  const memberships = await store.listMemberships(session.userId);
  const organisations = await Promise.all(
    memberships.map(async ({ orgId, role }) => ({
      id: orgId,
      name: (await store.findOrganisation(orgId))?.name ?? orgId,
      role,
    })),
  );
  return {
    sso: true,
    signedIn: true,
    user: { id: session.userId, name: session.userName },
    organisation: session.orgId,
    organisations,
    csrfToken: session.csrfToken,
    expiresAt: session.expiresAt.toISOString(),
  };
}

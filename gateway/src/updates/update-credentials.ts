import type { PageAuth } from '@perfwatch/common';
import { SecretKeyError, type SecretBox } from '../accounts/secret-box.ts';
import { openProjectAuth } from '../projects/project-auth.ts';
import { NO_TRUST, untrustedLocations, untrustedReasons, type CredentialTrust } from '../projects/credential-trust.ts';
import type { ProjectRecord } from '../store/store.ts';
import { NoResultError } from './no-result.ts';

/**
 * A credentialed project whose locations are not all trusted with its credentials: what an
 * update of it is refused with (before it is queued, and again before any job goes out).
 */
export function refuseUntrustedCredentials(given: CredentialTrust | undefined, project: ProjectRecord): void {
  const trust = given ?? NO_TRUST;
  const untrusted = untrustedLocations(trust, project);
  if (untrusted.length === 0) return;
  throw new NoResultError(
    'CREDENTIALS_NOT_TRUSTED',
    `This project has credentials for its login, and they may not go to ${untrusted.join(', ')}: agents there are run by operators this gateway does not trust with them.`,
    untrustedReasons(trust, untrusted),
    true,
  );
}

/** The credentials the project's page needs, opened for this update only, if every location may have them. */
export function credentialsOf(
  { secrets, credentialTrust }: { secrets?: SecretBox | undefined; credentialTrust?: CredentialTrust | undefined },
  project: ProjectRecord,
): PageAuth | undefined {
  if (!project.auth) return undefined;
  refuseUntrustedCredentials(credentialTrust, project);
  try {
    if (!secrets) throw new SecretKeyError('this gateway has no PERFWATCH_SECRETS_KEY');
    return openProjectAuth(secrets, project);
  } catch (error) {
    // Measuring without them would store the login page as if it were the page.
    throw new NoResultError(
      'CREDENTIALS_UNREADABLE',
      "The project's credentials for its login cannot be read by this gateway.",
      [(error as Error).message],
      true,
    );
  }
}

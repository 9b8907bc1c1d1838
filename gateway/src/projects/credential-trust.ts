import { LOCATIONS, type Location } from '@perfwatch/common';
import type { ProjectRecord } from '../store/store.ts';

/**
 * Where a project's credentials may go. A job carries them opened (cookies, bearer headers,
 * login passwords) to the agent that runs it, and an agent is run by whoever runs its location:
 * TLS and NATS accounts keep others out, not that operator. So credentials go only to the
 * locations the gateway's operator names (PERFWATCH_TRUSTED_LOCATIONS) and to the agents of
 * this very process (`perfwatch start`), never by default to a region someone else runs.
 */
export interface CredentialTrust {
  readonly trusted: ReadonlySet<Location>;
}

export function credentialTrust(configured: readonly Location[], inProcess: readonly Location[] = []): CredentialTrust {
  return { trusted: new Set([...configured, ...inProcess]) };
}

/** Trusted with nothing: what a gateway given no trust has. */
export const NO_TRUST: CredentialTrust = { trusted: new Set() };

/** The locations credentials may not go to, of these. */
export function locationsNotTrusted({ trusted }: CredentialTrust, locations: readonly Location[]): Location[] {
  return locations.filter((location) => !trusted.has(location));
}

/** The project's locations its credentials may not go to: none when it has no credentials. */
export function untrustedLocations(
  trust: CredentialTrust,
  project: Pick<ProjectRecord, 'auth' | 'locations'>,
): Location[] {
  return project.auth ? locationsNotTrusted(trust, project.locations) : [];
}

/** Why a credentialed project cannot be measured at these locations, for the caller. */
export function untrustedReasons({ trusted }: CredentialTrust, untrusted: readonly Location[]): string[] {
  const allowed = LOCATIONS.filter((location) => trusted.has(location));
  return [
    `untrusted locations: ${untrusted.join(', ')}`,
    allowed.length > 0
      ? `locations trusted with credentials: ${allowed.join(', ')}`
      : 'no location is trusted with credentials (PERFWATCH_TRUSTED_LOCATIONS is empty)',
    "remove the credentials (clear=true), or the project's other locations, or ask the operator to trust them",
  ];
}

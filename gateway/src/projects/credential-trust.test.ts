import { describe, expect, it } from 'vitest';
import { credentialTrust, untrustedLocations, untrustedReasons } from './credential-trust.ts';
import { gatewayEnvSchema } from '../config.ts';

describe('credential trust', () => {
  it('trusts the configured locations and the agents of this very process, nothing else', () => {
    const trust = credentialTrust(['london'], ['tokyo']);
    const project = { auth: 'sealed', locations: ['london', 'tokyo', 'frankfurt'] as const };
    expect(untrustedLocations(trust, { ...project, locations: [...project.locations] })).toEqual(['frankfurt']);
    expect(untrustedLocations(credentialTrust([]), { auth: 'sealed', locations: ['london'] })).toEqual(['london']);
  });

  it('asks nothing of a project without credentials', () => {
    expect(untrustedLocations(credentialTrust([]), { auth: null, locations: ['london', 'tokyo'] })).toEqual([]);
  });

  it('says which locations are trusted, or that none is', () => {
    expect(untrustedReasons(credentialTrust([]), ['tokyo']).join(' ')).toMatch(
      /untrusted locations: tokyo.*PERFWATCH_TRUSTED_LOCATIONS is empty/,
    );
    expect(untrustedReasons(credentialTrust(['london']), ['tokyo']).join(' ')).toMatch(
      /trusted with credentials: london/,
    );
  });

  it('reads PERFWATCH_TRUSTED_LOCATIONS as a list of known locations', () => {
    expect(
      gatewayEnvSchema.parse({ PERFWATCH_TRUSTED_LOCATIONS: ' london, tokyo,london' }).PERFWATCH_TRUSTED_LOCATIONS,
    ).toEqual(['london', 'tokyo']);
    expect(gatewayEnvSchema.parse({}).PERFWATCH_TRUSTED_LOCATIONS).toEqual([]);
    expect(gatewayEnvSchema.safeParse({ PERFWATCH_TRUSTED_LOCATIONS: 'mars' }).success).toBe(false);
  });
});

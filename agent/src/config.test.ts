import { describe, expect, it } from 'vitest';
import { deprecatedNamesIn } from '@perfwatch/common';
import { agentSettings, loadAgentConfig } from './config.ts';

describe('the agent settings', () => {
  it('reads OPS_PORT and OPS_HOST, as the gateway does', () => {
    const config = loadAgentConfig({ PERFWATCH_LOCATION: 'london', OPS_PORT: '9500', OPS_HOST: '127.0.0.1' }, false);
    expect([config.OPS_PORT, config.OPS_HOST]).toEqual([9500, '127.0.0.1']);
    expect(loadAgentConfig({ PERFWATCH_LOCATION: 'london' }, false).OPS_PORT).toBe(9464);
  });

  it('still reads the old PERFWATCH_OPS_PORT and PERFWATCH_OPS_HOST, and names them to be logged', () => {
    const env = { PERFWATCH_LOCATION: 'london', PERFWATCH_OPS_PORT: '9501', PERFWATCH_OPS_HOST: '127.0.0.2' };
    const config = loadAgentConfig(env, false);
    expect([config.OPS_PORT, config.OPS_HOST]).toEqual([9501, '127.0.0.2']);
    expect(deprecatedNamesIn(env, agentSettings.aliases)).toEqual([
      { deprecated: 'PERFWATCH_OPS_PORT', use: 'OPS_PORT' },
      { deprecated: 'PERFWATCH_OPS_HOST', use: 'OPS_HOST' },
    ]);
    expect(loadAgentConfig({ ...env, OPS_PORT: '9502' }, false).OPS_PORT).toBe(9502);
  });

  it('refuses an allow-list that is not CIDRs or addresses, as the gateway and admin do', () => {
    expect(() => loadAgentConfig({ PERFWATCH_LOCATION: 'london', PERFWATCH_ALLOW_TARGETS: 'intranet' }, false)).toThrow(
      /PERFWATCH_ALLOW_TARGETS.*comma-separated CIDRs/,
    );
  });
});

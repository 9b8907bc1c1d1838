import { describe, expect, it } from 'vitest';
import { gatewayEnvSchema, loadGatewayConfig } from './config.ts';

describe('the gateway settings', () => {
  it('keeps the run timeout inside the reply window NATS is shipped with (5 minutes, less the 30 s grace)', () => {
    expect(gatewayEnvSchema.parse({ RUN_TIMEOUT_MS: '270000' }).RUN_TIMEOUT_MS).toBe(270_000);
    const refused = gatewayEnvSchema.safeParse({ RUN_TIMEOUT_MS: '300000' });
    expect(refused.success).toBe(false);
    expect(JSON.stringify(refused.error?.issues)).toMatch(/NATS reply window is 5 minutes/);
  });
});

describe('PERFWATCH_ALLOW_TARGETS', () => {
  it('is checked on the gateway as on agents: CIDRs or addresses', () => {
    expect(gatewayEnvSchema.parse({ PERFWATCH_ALLOW_TARGETS: '10.0.0.0/8, 192.168.1.5' }).PERFWATCH_ALLOW_TARGETS).toBe(
      '10.0.0.0/8, 192.168.1.5',
    );
    expect(gatewayEnvSchema.parse({}).PERFWATCH_ALLOW_TARGETS).toBe('');
    expect(gatewayEnvSchema.safeParse({ PERFWATCH_ALLOW_TARGETS: 'intranet' }).success).toBe(false);
  });
});

describe('ANSWER_STALL_MS', () => {
  it('still reads its old name, OVERVIEW_STALL_MS, when it is not set itself', () => {
    expect(loadGatewayConfig({ OVERVIEW_STALL_MS: '2000' }).ANSWER_STALL_MS).toBe(2_000);
    expect(loadGatewayConfig({ OVERVIEW_STALL_MS: '2000', ANSWER_STALL_MS: '3000' }).ANSWER_STALL_MS).toBe(3_000);
    expect(loadGatewayConfig({}).ANSWER_STALL_MS).toBe(30_000);
  });
});

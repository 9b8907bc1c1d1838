import { describe, expect, it } from 'vitest';
import { gatewayEnvSchema } from './config.ts';

describe('the gateway settings', () => {
  it('keeps the run timeout inside the reply window NATS is shipped with (5 minutes, less the 30 s grace)', () => {
    expect(gatewayEnvSchema.parse({ RUN_TIMEOUT_MS: '270000' }).RUN_TIMEOUT_MS).toBe(270_000);
    const refused = gatewayEnvSchema.safeParse({ RUN_TIMEOUT_MS: '300000' });
    expect(refused.success).toBe(false);
    expect(JSON.stringify(refused.error?.issues)).toMatch(/NATS reply window is 5 minutes/);
  });
});

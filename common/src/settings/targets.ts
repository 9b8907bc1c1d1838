import { z } from 'zod';
import { parseAllowList } from '../target-guard.ts';
import { settingGroup } from './setting-group.ts';

/** Which addresses measured pages and webhook targets may have. */
export const targetSettings = settingGroup('Network targets', {
  /** No default here: `perfwatch start` works its own out (loopback when alone). */
  PERFWATCH_ALLOW_TARGETS: z
    .string()
    .refine((text) => {
      try {
        parseAllowList(text);
        return true;
      } catch {
        return false;
      }
    }, 'must be comma-separated CIDRs or IP addresses, e.g. 10.0.0.0/8,192.168.1.20')
    .optional()
    .describe(
      'Measured pages (on agents) and webhook targets (on gateways) must be public addresses; the CIDRs or ' +
        'addresses listed here, comma-separated (`10.0.0.0/8,192.168.1.5`), are allowed although private, ' +
        'and webhooks to them may be plain http.',
    ),
});

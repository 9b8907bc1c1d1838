import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditRunner, RunRequest } from '@perfwatch/agent';
import type { RunFailure } from '@perfwatch/agent';
import { loadLhr } from './lhr-fixtures.ts';

/**
 * A runner double for suites about dispatch, not measurement: answers with the captured real
 * Lighthouse results of the fixture site, in turn, after `delayMs`. It records what it ran.
 */
export function fixtureRunner({ delayMs = 0, fail }: { delayMs?: number; fail?: (request: RunRequest) => RunFailure | null } = {}): AuditRunner & { requests: RunRequest[] } {
  const requests: RunRequest[] = [];
  let turn = 0;
  return {
    requests,
    async run(request) {
      requests.push(request);
      await sleep(delayMs);
      const failure = fail?.(request);
      if (failure) throw failure;
      const lhr = loadLhr(request.device, ((turn++ % 3) + 1) as 1 | 2 | 3);
      lhr.requestedUrl = request.url;
      return { lhr, lighthouseMs: delayMs };
    },
    async close() {},
  };
}

import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditRunner, RunRequest } from '@perfwatch/agent';
import type { RunFailure } from '@perfwatch/agent';
import { loadLhr } from './lhr-fixtures.ts';

/**
 * A runner double for suites about dispatch, not measurement: answers with the captured real
 * Lighthouse results of the fixture site, in turn, after `delayMs`. It records what it ran.
 */
export function fixtureRunner({ delayMs = 0, fail }: { delayMs?: number; fail?: (request: RunRequest) => RunFailure | null } = {}): AuditRunner & { requests: RunRequest[]; readonly maxConcurrent: number } {
  const requests: RunRequest[] = [];
  let turn = 0;
  let running = 0;
  let maxConcurrent = 0;
  return {
    requests,
    get maxConcurrent() {
      return maxConcurrent;
    },
    async run(request) {
      requests.push(request);
      maxConcurrent = Math.max(maxConcurrent, ++running);
      await sleep(delayMs).finally(() => running--);
      const failure = fail?.(request);
      if (failure) throw failure;
      const lhr = loadLhr(request.device, ((turn++ % 3) + 1) as 1 | 2 | 3);
      lhr.requestedUrl = request.url;
      return { lhr, lighthouseMs: delayMs };
    },
    async close() {},
  };
}

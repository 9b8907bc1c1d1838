import { setTimeout as sleep } from 'node:timers/promises';
import type { PageRunner, RunOutput, RunRequest } from '@perfwatch/agent';
import type { RunFailure } from '@perfwatch/agent';
import type { LighthouseResult } from '@perfwatch/common';
import { loadLhr } from './lhr-fixtures.ts';

/**
 * A runner double for suites about dispatch, not measurement: answers with the captured real
 * Lighthouse results of the fixture site, in turn, after `delayMs`. It records what it ran.
 * With `conditions` it reports them as a calibrating runner would (the agent adds how busy it was);
 * `change` alters each result, told how many runs the runner has been asked for so far.
 */
export function fixtureRunner({
  delayMs = 0,
  fail,
  conditions,
  change,
}: {
  delayMs?: number;
  fail?: (request: RunRequest) => RunFailure | null;
  conditions?: RunOutput['conditions'];
  change?: (lhr: LighthouseResult, runNumber: number) => void;
} = {}): PageRunner & { requests: RunRequest[]; readonly maxConcurrent: number } {
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
      change?.(lhr, requests.length);
      return { lhr, lighthouseMs: delayMs, ...(conditions ? { conditions } : {}) };
    },
    async close() {},
  };
}

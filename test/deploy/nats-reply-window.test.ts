import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LOCATIONS, type AuditJob } from '@perfwatch/common';
import { createNatsDispatcher, gatewayConfigWith, type RunOutcome } from '@perfwatch/gateway';
import { silentLogger } from '../support/test-services.ts';

// The NATS reply window of the shipped configuration against the gateway's own wait for a
// reply: every agent role's allow_responses and every location's service-export
// response_threshold must be at least as long, or nats-server drops replies the gateway still
// waits for (and the gateway records TIMEOUT for a run that ended). The gateway's wait is
// measured from its dispatcher, not copied: changing either side alone fails here.
// test/integration/nats-reply-window.test.ts shows the shipped files carrying a reply past
// NATS's default 2 minutes.

const nats = join(dirname(fileURLToPath(import.meta.url)), '../../deploy/nats');
const read = (file: string) => readFileSync(join(nats, file), 'utf8');

const UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001, µs: 0.001, ns: 1e-6 };

/** A Go duration ("5m", "2m30s", "150s") in ms, as nats-server's time.ParseDuration reads it. */
function goDurationMs(text: string): number {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a duration: ${text}`);
  return parts.reduce((ms, [, value, unit]) => ms + Number(value) * UNITS[unit!]!, 0);
}

/** Lines that are not comments: a comment may name a setting without setting it. */
const settings = (text: string) =>
  text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n');

/**
 * How long the gateway's dispatcher waits for a run's reply with the gateway's default
 * settings: a run offered as a sync update offers it (its whole SYNC_UPDATE_TIMEOUT_MS left),
 * a job with the default RUN_TIMEOUT_MS, a connection on which nothing ever answers, and the
 * time from the job's publication to the dispatcher giving up on it.
 */
async function gatewayReplyWaitMs(): Promise<{ waitMs: number; outcome: RunOutcome }> {
  const config = gatewayConfigWith({});
  vi.useFakeTimers();
  const published: number[] = [];
  const nc = {
    subscribe: () => ({}),
    publish: () => void published.push(Date.now()),
    status: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => {}) }) }),
  } as unknown as NatsConnection;
  const dispatcher = createNatsDispatcher({ nc, logger: silentLogger });
  const job: AuditJob = {
    jobId: 'u.desktop.tokyo.0',
    updateId: 'u',
    url: 'https://example.com/',
    device: 'desktop',
    location: 'tokyo',
    runIndex: 0,
    timeoutMs: config.RUN_TIMEOUT_MS,
  };
  let ended: { at: number; outcome: RunOutcome } | undefined;
  void dispatcher
    .dispatch(job, { timeoutMs: config.SYNC_UPDATE_TIMEOUT_MS, requestId: 'r' })
    .then((outcome) => (ended = { at: Date.now(), outcome }));
  await vi.runAllTimersAsync();
  expect(published).toHaveLength(1);
  expect(ended, 'the dispatcher never gave up on the reply').toBeDefined();
  return { waitMs: ended!.at - published[0]!, outcome: ended!.outcome };
}

afterEach(() => {
  vi.useRealTimers();
});

const agentRoles = readdirSync(join(nats, 'roles'))
  .filter((f) => f.startsWith('agent-'))
  .sort();

describe('the NATS reply window of deploy/nats', () => {
  it("the gateway waits longer than NATS's default 2 minutes for a reply, and gives up with TIMEOUT", async () => {
    const { waitMs, outcome } = await gatewayReplyWaitMs();
    // A run may take its whole deadline, and its reply comes after it: the wait is longer.
    expect(waitMs).toBeGreaterThan(gatewayConfigWith({}).RUN_TIMEOUT_MS);
    expect(waitMs).toBeGreaterThan(120_000);
    expect(outcome).toMatchObject({ ok: false, error: { code: 'TIMEOUT' } });
  });

  it('has an agent role for every location', () => {
    expect(agentRoles).toEqual(LOCATIONS.map((l) => `agent-${l}.conf`).sort());
  });

  it.each(agentRoles)("%s lets an agent answer a job once, for at least the gateway's wait", async (role) => {
    const text = settings(read(`roles/${role}`));
    const windows = [...text.matchAll(/allow_responses\s*:\s*(.*)/g)].map((m) => m[1]!.trim());
    expect(windows).toHaveLength(1);
    // `true` is nats-server's default: one reply within 2 minutes.
    const parsed = /^\{\s*max\s*:\s*1\s*,\s*expires\s*:\s*"([^"]+)"\s*\}$/.exec(windows[0]!);
    expect(parsed, `allow_responses: ${windows[0]}`).not.toBeNull();
    const { waitMs } = await gatewayReplyWaitMs();
    expect(goDurationMs(parsed![1]!)).toBeGreaterThanOrEqual(waitMs);
  });

  it("every location's service export on the hub keeps a job's reply mapping for at least the gateway's wait", async () => {
    const text = settings(read('nats-server.conf'));
    const exports = [...text.matchAll(/\{\s*service\s*:\s*"perfwatch\.audit\.v1\.(\w+)"[^}]*\}/g)];
    expect(exports.map((m) => m[1]).sort()).toEqual([...LOCATIONS].sort());
    const { waitMs } = await gatewayReplyWaitMs();
    for (const [exported, location] of exports) {
      const threshold = /response_threshold\s*:\s*"([^"]+)"/.exec(exported);
      expect(threshold, `${location}: ${exported}`).not.toBeNull();
      expect(goDurationMs(threshold![1]!), location).toBeGreaterThanOrEqual(waitMs);
    }
  });

  it("a region's server gives its agents the agent role, and with it the role's window", () => {
    const text = settings(read('leafnode-region.conf'));
    expect(text).toMatch(/permissions\s*:\s*\{\s*include\s+"roles\/agent-\w+\.conf"\s*\}/);
    expect(text).not.toMatch(/allow_responses/);
  });

  it('reads durations as nats-server does', () => {
    expect(goDurationMs('5m')).toBe(300_000);
    expect(goDurationMs('2m30s')).toBe(150_000);
    expect(goDurationMs('1h')).toBe(3_600_000);
    expect(() => goDurationMs('5 minutes')).toThrow(/not a duration/);
  });
});

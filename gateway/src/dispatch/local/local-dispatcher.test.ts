import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { AuditJob, AuditReply } from '@perfwatch/common';
import type { InProcessAgent } from '@perfwatch/common';
import { createLocalDispatcher } from './local-dispatcher.ts';

const logger = pino({ level: 'silent' });

const job = (n: number): AuditJob => ({
  jobId: `local-${n}`,
  updateId: 'local',
  url: 'http://fixture.test/',
  device: 'mobile',
  location: 'frankfurt',
  runIndex: n,
  timeoutMs: 60_000,
});

/** An in-process agent that answers each run after `ms` with a failure (what it answers is not the point here), and records what it ran. */
function agentTaking(ms: number, capacity = 1) {
  const ran: string[] = [];
  let busy = 0;
  let mostBusy = 0;
  const agent: InProcessAgent = {
    location: 'frankfurt',
    agentId: 'fra-local',
    capacity,
    get busy() {
      return busy;
    },
    waiting: 0,
    async run(job): Promise<AuditReply> {
      ran.push(job.jobId);
      mostBusy = Math.max(mostBusy, ++busy);
      await sleep(ms);
      busy--;
      return {
        ok: false,
        jobId: job.jobId,
        agentId: 'fra-local',
        error: { code: 'INTERNAL', message: 'answered', retryable: true },
      };
    },
  };
  return { agent, ran, mostBusy: () => mostBusy };
}

describe('local dispatcher', () => {
  it('hands an agent no more runs than its capacity; the others wait, counted as waiting', async () => {
    const { agent, mostBusy } = agentTaking(30, 2);
    const dispatcher = createLocalDispatcher({ agents: [agent], logger });
    const outcomes = Array.from({ length: 6 }, (_, n) =>
      dispatcher.dispatch(job(n), { timeoutMs: 5_000, requestId: `r${n}`, user: 'u' }),
    );
    await sleep(5);
    expect(dispatcher.waiting!('frankfurt')).toBe(4);
    expect((await Promise.all(outcomes)).map((o) => !o.ok && o.error.code)).toEqual(Array(6).fill('INTERNAL'));
    expect(mostBusy()).toBe(2);
    expect(dispatcher.waiting!('frankfurt')).toBe(0);
  });

  it("gives the next free place to another user's run before a user's backlog", async () => {
    const { agent, ran } = agentTaking(20);
    const dispatcher = createLocalDispatcher({ agents: [agent], logger });
    const heavy = Array.from({ length: 5 }, (_, n) =>
      dispatcher.dispatch(job(n), { timeoutMs: 5_000, requestId: `h${n}`, user: 'heavy' }),
    );
    const light = dispatcher.dispatch(job(99), { timeoutMs: 5_000, requestId: 'l', user: 'light' });
    await Promise.all([...heavy, light]);
    expect(ran.indexOf('local-99')).toBe(1);
  });

  it('answers TIMEOUT for a run still waiting for a place at its timeout, and NO_RESPONDERS without an agent', async () => {
    const { agent, ran } = agentTaking(200);
    const dispatcher = createLocalDispatcher({ agents: [agent], logger });
    const first = dispatcher.dispatch(job(1), { timeoutMs: 5_000, requestId: 'a', user: 'u' });
    const late = await dispatcher.dispatch(job(2), { timeoutMs: 50, requestId: 'b', user: 'v' });
    expect(late).toMatchObject({ ok: false, error: { code: 'TIMEOUT' } });
    expect(dispatcher.waiting!('frankfurt')).toBe(0);
    await first;
    expect(ran).toEqual(['local-1']);
    const away = await dispatcher.dispatch({ ...job(3), location: 'tokyo' }, { timeoutMs: 50, requestId: 'c' });
    expect(away).toMatchObject({ ok: false, error: { code: 'NO_RESPONDERS' } });
  });
});

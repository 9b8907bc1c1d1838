import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createShutdown } from './shutdown.ts';

function logged() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('createShutdown', () => {
  it('runs its steps once, in order, whatever the number of signals', async () => {
    const { logger, lines } = logged();
    const order: string[] = [];
    const step = (name: string, ms: number) => ({ name, run: () => sleep(ms).then(() => order.push(name)) });
    const shutdown = createShutdown({ logger, deadlineMs: 5_000 }, [
      step('http', 20),
      step('nats', 5),
      step('store', 1),
    ]);
    const first = shutdown('SIGTERM');
    const second = shutdown('SIGINT');
    expect(second).toBe(first);
    await first;
    expect(order).toEqual(['http', 'nats', 'store']);
    expect(lines.filter((l) => l['msg'] === 'shutting down')).toEqual([expect.objectContaining({ reason: 'SIGTERM' })]);
  });

  it('goes on past a step that fails, and says which', async () => {
    const { logger, lines } = logged();
    const order: string[] = [];
    const shutdown = createShutdown({ logger, deadlineMs: 5_000 }, [
      { name: 'agent', run: () => Promise.reject(new Error('already stopped')) },
      { name: 'nats', run: () => order.push('nats') },
    ]);
    await shutdown('SIGTERM');
    expect(order).toEqual(['nats']);
    expect(lines).toContainEqual(
      expect.objectContaining({ step: 'agent', msg: 'a shutdown step failed; going on with the next' }),
    );
  });

  it('ends at its deadline, naming the step still running', async () => {
    const { logger, lines } = logged();
    const ended: string[] = [];
    const shutdown = createShutdown({ logger, deadlineMs: 30, onDeadline: (pending) => ended.push(pending) }, [
      { name: 'quick', run: () => undefined },
      { name: 'stuck', run: () => new Promise(() => {}) },
    ]);
    void shutdown('SIGTERM');
    await sleep(80);
    expect(ended).toEqual(['stuck']);
    expect(lines).toContainEqual(
      expect.objectContaining({ pending: 'stuck', msg: 'shutdown deadline passed; exiting' }),
    );
  });
});

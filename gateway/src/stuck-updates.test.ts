import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Store, UpdateRecord, UpdateState } from './store/store.ts';
import type { QueuedUpdate, UpdateQueue } from './update-queue.ts';
import { sweepStuckUpdates } from './stuck-updates.ts';

const NOW = new Date('2026-06-01T12:00:00Z');
const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000);

function update(id: string, { created, touched, status = 'queued' }: { created: number; touched: number; status?: 'queued' | 'running' }): UpdateRecord {
  return { id, userId: 'u', projectId: 'p', url: 'https://a.example/', devices: ['mobile'], locations: ['london'], updateType: 'scheduled', status, date: null, reason: null, attempts: 0, progress: [], missing: [], createdAt: minutesAgo(created), updatedAt: minutesAgo(touched) };
}

function sweepOver(updates: UpdateRecord[], held: string[]) {
  const states = new Map<string, UpdateState>();
  const queued: Array<{ job: QueuedUpdate; again: boolean }> = [];
  const stored = new Map([['stored', { date: new Date('2026-06-01T11:00:00Z'), missing: [] }]]);
  const store = { listUnfinishedUpdates: async () => updates, findSnapshotOfUpdate: async (id: string) => stored.get(id) ?? null, setUpdateState: async (id: string, state: UpdateState) => void states.set(id, state) } as unknown as Store;
  const queue: UpdateQueue = { enqueue: async (job, options) => void queued.push({ job, again: options?.again ?? false }), holds: async (id) => held.includes(id), stop: async () => undefined };
  const report = sweepStuckUpdates({ store, queue, logger: pino({ level: 'silent' }), deadlineMs: 30 * 60_000, graceMs: 2 * 60_000, now: () => NOW });
  return { report, states, queued };
}

describe('sweepStuckUpdates', () => {
  it('records done an unfinished update whose snapshot is stored, past its deadline or not', async () => {
    const { report, states, queued } = sweepOver([update('stored', { created: 60, touched: 50, status: 'running' })], []);
    expect(await report).toEqual({ recorded: ['stored'], queuedAgain: [], failed: [] });
    expect(states.get('stored')).toEqual({ status: 'done', date: new Date('2026-06-01T11:00:00Z'), missing: [] });
    expect(queued).toEqual([]);
  });

  it('queues again an update whose job the queue lost, and leaves one it holds, or one just recorded, alone', async () => {
    const { report, states, queued } = sweepOver([update('lost', { created: 10, touched: 10 }), update('waiting', { created: 10, touched: 10 }), update('fresh', { created: 1, touched: 1 })], ['waiting']);
    expect(await report).toEqual({ recorded: [], queuedAgain: ['lost'], failed: [] });
    expect(queued).toEqual([{ job: { updateId: 'lost', userId: 'u', url: 'https://a.example/', devices: ['mobile'], updateType: 'scheduled', requestId: 'sweep-lost' }, again: true }]);
    expect(states.size).toBe(0);
  });

  it('fails, with the reason, an update past its deadline whether the queue still holds it or not', async () => {
    const { report, states, queued } = sweepOver([update('late-held', { created: 40, touched: 35, status: 'running' }), update('late-lost', { created: 40, touched: 40 })], ['late-held']);
    expect(await report).toEqual({ recorded: [], queuedAgain: [], failed: ['late-held', 'late-lost'] });
    expect(queued).toEqual([]);
    expect(states.get('late-held')).toEqual({ status: 'failed', reason: expect.stringMatching(/not finished by its deadline/) });
    expect(states.get('late-lost')).toEqual({ status: 'failed', reason: expect.stringMatching(/lost before it could run/) });
  });
});

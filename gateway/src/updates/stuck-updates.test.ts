import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ProjectRecord, UnannouncedSnapshot, UpdateRecord, UpdateState } from '../store/store.ts';
import type { QueuedUpdate, UpdateQueue } from './update-queue.ts';
import { sweepStuckUpdates, type StuckUpdatesStore } from './stuck-updates.ts';

const NOW = new Date('2026-06-01T12:00:00Z');
const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000);

function update(
  id: string,
  {
    created,
    touched,
    status = 'queued',
    admitted = created,
    userId = 'u',
  }: { created: number; touched: number; status?: 'queued' | 'running'; admitted?: number | null; userId?: string },
): UpdateRecord {
  return {
    id,
    userId,
    projectId: 'p',
    url: 'https://a.example/',
    devices: ['mobile'],
    locations: ['london'],
    updateType: 'scheduled',
    status,
    date: null,
    reason: null,
    attempts: 0,
    runs: 1,
    admittedAt: admitted === null ? null : minutesAgo(admitted),
    progress: [],
    missing: [],
    createdAt: minutesAgo(created),
    updatedAt: minutesAgo(touched),
  };
}

const PROJECT = { id: 'p', userId: 'u', url: 'https://a.example/' } as ProjectRecord;

function sweepOver(
  updates: UpdateRecord[],
  held: string[],
  {
    owed = [],
    outboxFails = false,
  }: {
    /** Stored snapshots still marked unannounced, with when they were stored. */
    owed?: UnannouncedSnapshot[];
    outboxFails?: boolean;
  } = {},
) {
  const states = new Map<string, UpdateState>();
  const queued: Array<{ job: QueuedUpdate; again: boolean }> = [];
  const stored = new Map([['stored', { date: new Date('2026-06-01T11:00:00Z'), missing: [] }]]);
  const askedBefore: Date[] = [];
  const store: StuckUpdatesStore = {
    listUnfinishedUpdates: async () => updates,
    findSnapshotOfUpdate: async (id: string) => stored.get(id) ?? null,
    setUpdateState: async (id: string, state: UpdateState) => void states.set(id, state),
    listUnannouncedSnapshots: async (storedBefore: Date) => (
      askedBefore.push(storedBefore),
      owed.filter((s) => s.storedAt <= storedBefore)
    ),
    findProject: async (userId: string, url: string) =>
      userId === PROJECT.userId && url === PROJECT.url ? PROJECT : null,
    findSnapshot: async (projectId: string, date: Date) => ({
      id: 'snapshot',
      projectId,
      updateId: 'owed',
      url: PROJECT.url,
      date,
      updateType: 'scheduled',
      available: [],
      missing: [],
      results: [],
    }),
    markSnapshotAnnounced: async () => undefined,
  };
  const queue: UpdateQueue = {
    enqueue: async (job, options) => void queued.push({ job, again: options?.again ?? false }),
    holds: async (id) => held.includes(id),
    stop: async () => undefined,
  };
  const admittedFor: string[] = [];
  // The users' room, as the store would find it: one place each.
  const admission = {
    admitNext: async (userId: string) => (
      admittedFor.push(userId),
      updates
        .filter((u) => u.userId === userId && u.admittedAt === null)
        .slice(0, 1)
        .map((u) => u.id)
    ),
  };
  const announced: string[] = [];
  const outbox = {
    updateFailed: async ({ updateId, reason }: { updateId: string; reason: string }) => {
      if (outboxFails) throw new Error('the database went away');
      announced.push(`${updateId}: ${reason}`);
      return 1;
    },
    snapshotStored: async ({ updateId, date }: { updateId: string; date: Date }, late?: { storedAt: Date }) => {
      if (outboxFails) throw new Error('the database went away');
      announced.push(`${updateId} of ${date.toISOString()}, webhooks of ${late?.storedAt.toISOString()}`);
      return 1;
    },
  };
  const report = sweepStuckUpdates({
    store,
    queue,
    admission,
    logger: pino({ level: 'silent' }),
    deadlineMs: 30 * 60_000,
    graceMs: 2 * 60_000,
    outbox,
    now: () => NOW,
  });
  return { report, states, queued, admittedFor, announced, askedBefore };
}

describe('sweepStuckUpdates', () => {
  it('records done an unfinished update whose snapshot is stored, past its deadline or not', async () => {
    const { report, states, queued } = sweepOver(
      [update('stored', { created: 60, touched: 50, status: 'running' })],
      [],
    );
    expect(await report).toEqual({ recorded: ['stored'], queuedAgain: [], failed: [], admitted: [], announced: [] });
    expect(states.get('stored')).toEqual({ status: 'done', date: new Date('2026-06-01T11:00:00Z'), missing: [] });
    expect(queued).toEqual([]);
  });

  it('queues again an update whose job the queue lost, and leaves one it holds, or one just recorded, alone', async () => {
    const { report, states, queued } = sweepOver(
      [
        update('lost', { created: 10, touched: 10 }),
        update('waiting', { created: 10, touched: 10 }),
        update('fresh', { created: 1, touched: 1 }),
      ],
      ['waiting'],
    );
    expect(await report).toEqual({ recorded: [], queuedAgain: ['lost'], failed: [], admitted: [], announced: [] });
    expect(queued).toEqual([
      {
        job: {
          updateId: 'lost',
          userId: 'u',
          url: 'https://a.example/',
          devices: ['mobile'],
          updateType: 'scheduled',
          requestId: 'sweep-lost',
        },
        again: true,
      },
    ]);
    expect(states.size).toBe(0);
  });

  it('fails, with the reason, an update past its deadline whether the queue still holds it or not', async () => {
    const { report, states, queued, announced } = sweepOver(
      [
        update('late-held', { created: 40, touched: 35, status: 'running' }),
        update('late-lost', { created: 40, touched: 40 }),
      ],
      ['late-held'],
    );
    expect(await report).toEqual({
      recorded: [],
      queuedAgain: [],
      failed: ['late-held', 'late-lost'],
      admitted: [],
      announced: [],
    });
    // Each announced to its user's webhooks, with the same reason.
    expect(announced).toEqual([
      `late-held: ${(states.get('late-held') as { reason: string }).reason}`,
      `late-lost: ${(states.get('late-lost') as { reason: string }).reason}`,
    ]);
    expect(queued).toEqual([]);
    expect(states.get('late-held')).toEqual({
      status: 'failed',
      reason: expect.stringMatching(/not finished by its deadline/),
    });
    expect(states.get('late-lost')).toEqual({
      status: 'failed',
      reason: expect.stringMatching(/lost before it could run/),
    });
  });

  it('leaves updates waiting in a backlog to it, however old, and gives their users the places they have room for', async () => {
    const { report, states, queued, admittedFor } = sweepOver(
      [
        update('a1', { created: 90, touched: 90, admitted: null, userId: 'a' }),
        update('a2', { created: 90, touched: 90, admitted: null, userId: 'a' }),
        update('b1', { created: 50, touched: 50, admitted: null, userId: 'b' }),
      ],
      [],
    );
    expect(await report).toEqual({ recorded: [], queuedAgain: [], failed: [], admitted: ['a1', 'b1'], announced: [] });
    expect(admittedFor).toEqual(['a', 'b']);
    // a2 has waited 90 minutes, three times the deadline: it is not failed, its deadline has not begun.
    expect(states.size).toBe(0);
    expect(queued).toEqual([]);
  });

  it('leaves an update whose failure could not be announced unfinished, for the next sweep to announce and fail', async () => {
    const { report, states, announced } = sweepOver([update('late-lost', { created: 40, touched: 40 })], [], {
      outboxFails: true,
    });
    expect(await report).toEqual({ recorded: [], queuedAgain: [], failed: [], admitted: [], announced: [] });
    expect(states.size).toBe(0);
    expect(announced).toEqual([]);
  });

  it('announces the budget events of stored snapshots still marked unannounced once past the grace, to the webhooks of their time', async () => {
    const owed = (updateId: string, minutes: number): UnannouncedSnapshot => ({
      projectId: PROJECT.id,
      userId: PROJECT.userId,
      url: PROJECT.url,
      updateId,
      date: minutesAgo(minutes + 1),
      storedAt: minutesAgo(minutes),
    });
    const { report, announced, askedBefore } = sweepOver([], [], {
      owed: [owed('sync-killed', 5), owed('being-written', 1)],
    });
    expect(await report).toEqual({
      recorded: [],
      queuedAgain: [],
      failed: [],
      admitted: [],
      announced: ['sync-killed'],
    });
    // The grace: a live gateway may be between its save and its outbox write.
    expect(askedBefore).toEqual([minutesAgo(2)]);
    expect(announced).toEqual([
      `sync-killed of ${minutesAgo(6).toISOString()}, webhooks of ${minutesAgo(5).toISOString()}`,
    ]);
  });

  it('counts the deadline from the admission, not from the creation', async () => {
    const { report } = sweepOver(
      [update('late-admitted', { created: 60, touched: 10, admitted: 10 })],
      ['late-admitted'],
    );
    expect(await report).toEqual({ recorded: [], queuedAgain: [], failed: [], admitted: [], announced: [] });
  });
});

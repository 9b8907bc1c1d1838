import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { UpdateRefused } from './update-refused.ts';
import { SqliteStore } from '../store/sqlite-store.ts';
import type { QueuedUpdate, UpdateQueue } from './update-queue.ts';
import { createUpdateAdmission } from './update-admission.ts';

async function setUp({ failEnqueue = false } = {}) {
  const store = new SqliteStore({ path: ':memory:' });
  await store.init();
  const user = await store.createUser('u');
  const project = await store.addProject({
    userId: user.id,
    url: 'https://a.example/',
    domain: 'a.example',
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
  const queued: QueuedUpdate[] = [];
  const queue: UpdateQueue = {
    enqueue: async (job) => {
      if (failEnqueue) throw new Error('JetStream is away');
      queued.push(job);
    },
    holds: async () => false,
    stop: async () => undefined,
  };
  const admission = createUpdateAdmission({ store, queue: () => queue, logger: pino({ level: 'silent' }), perUser: 2 });
  // One mobile run in London of the user's project, each update its own id.
  const update = { userId: user.id, projectId: project.id, url: project.url, updateType: 'manual', runs: 1 } as const;
  const submit = async (options?: { refuseUnqueued?: boolean }) => {
    const id = randomUUID();
    await admission.submit(
      { ...update, id, devices: ['mobile'], locations: ['london'] },
      `req-${id.slice(0, 4)}`,
      options,
    );
    return id;
  };
  return { store, user, admission, submit, queued };
}

describe('update admission', () => {
  it("queues a user's first updates up to the limit, keeps the rest in the backlog, and admits the next as one ends", async () => {
    const { store, user, admission, submit, queued } = await setUp();
    const ids = [await submit(), await submit(), await submit(), await submit()];
    expect(queued.map((j) => j.updateId)).toEqual(ids.slice(0, 2));
    // The job carries the request id of the call that made it.
    expect(queued[0]!.requestId).toBe(`req-${ids[0]!.slice(0, 4)}`);
    expect((await store.findUpdate(user.id, ids[2]!))!.admittedAt).toBeNull();
    expect(await admission.admitNext(user.id)).toEqual([]);
    await store.setUpdateState(ids[0]!, { status: 'done', date: new Date() });
    expect(await admission.admitNext(user.id)).toEqual([ids[2]]);
    expect(queued.map((j) => j.updateId)).toEqual(ids.slice(0, 3));
  });

  it('admits once however many endings ask at the same time', async () => {
    const { store, user, admission, submit, queued } = await setUp();
    const ids = [await submit(), await submit(), await submit(), await submit(), await submit()];
    for (const id of ids.slice(0, 2)) await store.setUpdateState(id, { status: 'done', date: new Date() });
    const admitted = (
      await Promise.all([admission.admitNext(user.id), admission.admitNext(user.id), admission.admitNext(user.id)])
    ).flat();
    expect(admitted.sort()).toEqual(ids.slice(2, 4).sort());
    expect(queued).toHaveLength(4);
  });

  it('with refuseUnqueued, an admitted update whose job cannot be stored is failed and the caller gets 503; without, it stays for the sweep', async () => {
    const { store, user, submit } = await setUp({ failEnqueue: true });
    const refused = await submit({ refuseUnqueued: true }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(UpdateRefused);
    // A 503 to the caller (http-errors.ts).
    expect((refused as UpdateRefused).kind).toBe('NOT_QUEUED');
    const [failed] = await store.listUnfinishedUpdates();
    expect(failed).toBeUndefined();
    const kept = await submit();
    expect(await store.findUpdate(user.id, kept)).toMatchObject({ status: 'queued', admittedAt: expect.any(Date) });
  });
});

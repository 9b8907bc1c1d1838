import { expect, it } from 'vitest';
import { describeOnBothStores } from './store-backends.ts';

// Updates, their backlogs and the places of sync updates (UpdatesStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('updates', (store) => {
  it("keeps an update's state: queued, running (counting attempts), done with its date; pending counts per location", async () => {
    const user = await store().createUser('gus');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://gus.example/',
      domain: 'gus.example',
      locations: ['london', 'tokyo'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const id = '6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';
    const before = await store().countPendingUpdates('tokyo');
    await store().createUpdate({
      id,
      userId: user.id,
      projectId: project.id,
      url: project.url,
      devices: ['mobile'],
      locations: project.locations,
      updateType: 'manual',
      runs: 1,
    });
    // Waiting in its user's backlog: not yet counted against the location.
    expect(await store().countPendingUpdates('tokyo')).toBe(before);
    await store().admitUpdates(user.id, 10);
    expect(await store().countPendingUpdates('tokyo')).toBe(before + 1);
    await store().setUpdateState(id, { status: 'running' });
    await store().setUpdateState(id, { status: 'queued', reason: 'no agent answered; tried again later' });
    await store().setUpdateState(id, { status: 'running' });
    expect((await store().findUpdate(user.id, id))!.missing).toEqual([]);
    const date = new Date('2026-04-03T10:00:00Z');
    const missing = [{ device: 'mobile' as const, location: 'tokyo' as const, reason: 'TIMEOUT: no reply from tokyo' }];
    await store().setUpdateState(id, { status: 'done', date, missing });
    expect(await store().findUpdate(user.id, id)).toMatchObject({
      id,
      status: 'done',
      date,
      attempts: 2,
      devices: ['mobile'],
      locations: ['london', 'tokyo'],
      missing,
    });
    expect(await store().countPendingUpdates('tokyo')).toBe(before);
    // A late word from an earlier delivery does not undo `done`.
    await store().setUpdateState(id, { status: 'queued', reason: 'lost its connection' });
    await store().setUpdateState(id, { status: 'failed', reason: 'gave up' });
    expect(await store().findUpdate(user.id, id)).toMatchObject({ status: 'done', date });
    // `failed` gives way only to `done`: a late delivery's `queued` or `running` leaves it failed.
    const lost = '7f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';
    await store().createUpdate({
      id: lost,
      userId: user.id,
      projectId: project.id,
      url: project.url,
      devices: ['mobile'],
      locations: project.locations,
      updateType: 'manual',
      runs: 1,
    });
    await store().setUpdateState(lost, { status: 'failed', reason: 'delivered 50 times' });
    await store().setUpdateState(lost, { status: 'queued', reason: 'a late delivery' });
    await store().setUpdateState(lost, { status: 'running' });
    expect(await store().findUpdate(user.id, lost)).toMatchObject({
      status: 'failed',
      reason: 'delivered 50 times',
      attempts: 0,
    });
    await store().setUpdateState(lost, { status: 'done', date });
    expect(await store().findUpdate(user.id, lost)).toMatchObject({ status: 'done', date });
    // Another user does not see it.
    const other = await store().createUser('hal');
    expect(await store().findUpdate(other.id, id)).toBeNull();
  });

  it('lists the updates still queued or running, oldest first, for a queue to take up again', async () => {
    const user = await store().createUser('quinn');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://quinn.example/',
      domain: 'quinn.example',
      locations: ['tokyo'],
      defaultLocation: 'tokyo',
      runs: 1,
      schedule: null,
    });
    const ids = ['a', 'b', 'c'].map((c) => `${c.repeat(8)}-0000-4000-8000-000000000000`);
    for (const id of ids) {
      await store().createUpdate({
        id,
        userId: user.id,
        projectId: project.id,
        url: project.url,
        devices: ['mobile'],
        locations: ['tokyo'],
        updateType: 'manual',
        runs: 1,
      });
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await store().setUpdateState(ids[1]!, { status: 'running' });
    await store().setUpdateProgress(ids[1]!, [{ device: 'mobile', location: 'tokyo', done: 1, total: 3 }]);
    await store().setUpdateState(ids[2]!, { status: 'done', date: new Date() });
    const unfinished = (await store().listUnfinishedUpdates()).filter((u) => u.userId === user.id);
    expect(unfinished.map((u) => [u.id, u.status])).toEqual([
      [ids[0], 'queued'],
      [ids[1], 'running'],
    ]);
    expect(unfinished.map((u) => u.progress)).toEqual([
      [],
      [{ device: 'mobile', location: 'tokyo', done: 1, total: 3 }],
    ]);
    // Progress stops with `done`.
    await store().setUpdateProgress(ids[2]!, [{ device: 'mobile', location: 'tokyo', done: 0, total: 3 }]);
    expect((await store().findUpdate(user.id, ids[2]!))!.progress).toEqual([]);
  });

  it("keeps each user's backlog: what it weighs, and admits its oldest updates while the user has room", async () => {
    const busy = await store().createUser('backlog-busy');
    const calm = await store().createUser('backlog-calm');
    const project = await store().addProject({
      userId: busy.id,
      url: 'https://busy.example/',
      domain: 'busy.example',
      locations: ['tokyo', 'london'],
      defaultLocation: 'tokyo',
      runs: 3,
      schedule: null,
    });
    const theirs = await store().addProject({
      userId: calm.id,
      url: 'https://calm.example/',
      domain: 'calm.example',
      locations: ['tokyo'],
      defaultLocation: 'tokyo',
      runs: 1,
      schedule: null,
    });
    // Ids in the reverse of their arrival, created within a millisecond or two: the backlog keeps arrival order.
    const ids = Array.from({ length: 4 }, (_, i) => `${String(9 - i).repeat(8)}-1111-4000-8000-000000000000`);
    for (const id of ids)
      await store().createUpdate({
        id,
        userId: busy.id,
        projectId: project.id,
        url: project.url,
        devices: ['mobile', 'desktop'],
        locations: project.locations,
        updateType: 'manual',
        runs: 3,
      });
    const calmId = '55555555-1111-4000-8000-000000000000';
    await store().createUpdate({
      id: calmId,
      userId: calm.id,
      projectId: theirs.id,
      url: theirs.url,
      devices: ['mobile'],
      locations: ['tokyo'],
      updateType: 'manual',
      runs: 1,
    });
    // 4 updates × 2 devices × 2 locations × 3 runs; the other user's backlog is its own.
    expect(await store().userBacklog(busy.id)).toEqual({ updates: 4, runs: 48 });
    expect(await store().userBacklog(calm.id)).toEqual({ updates: 1, runs: 1 });
    // Waiting in the backlog until admitted; admitted oldest first, `limit` at once.
    expect((await store().findUpdate(busy.id, ids[0]!))!.admittedAt).toBeNull();
    const first = await store().admitUpdates(busy.id, 2);
    expect(first.map((u) => u.id)).toEqual(ids.slice(0, 2));
    expect(first[0]!.admittedAt).toBeInstanceOf(Date);
    expect((await store().findUpdate(busy.id, ids[0]!))!.admittedAt).toEqual(first[0]!.admittedAt);
    expect(await store().admitUpdates(busy.id, 2)).toEqual([]);
    // One ends: one place.
    await store().setUpdateState(ids[0]!, { status: 'done', date: new Date() });
    expect((await store().admitUpdates(busy.id, 2)).map((u) => u.id)).toEqual([ids[2]]);
    expect(await store().userBacklog(busy.id)).toEqual({ updates: 3, runs: 36 });
    // The other user's room is its own.
    expect((await store().admitUpdates(calm.id, 2)).map((u) => u.id)).toEqual([calmId]);
    expect(
      new Map(
        (await store().listUnfinishedUpdates())
          .filter((u) => u.userId === busy.id)
          .map((u) => [u.id, u.admittedAt !== null]),
      ),
    ).toEqual(
      new Map([
        [ids[1], true],
        [ids[2], true],
        [ids[3], false],
      ]),
    );
  });

  it("hands out a user's places up to the limit, frees released and expired ones, and keeps users apart", async () => {
    const user = await store().createUser('places-a');
    const other = await store().createUser('places-b');
    const a = await store().claimPlace('sync-update', user.id, 2, 60_000);
    const b = await store().claimPlace('sync-update', user.id, 2, 60_000);
    expect(a).not.toBeNull();
    expect(b).not.toBeNull();
    expect(await store().claimPlace('sync-update', user.id, 2, 60_000)).toBeNull();
    expect(await store().claimPlace('sync-update', other.id, 2, 60_000)).not.toBeNull();
    expect(await store().claimPlace('another-kind', user.id, 2, 60_000)).not.toBeNull();
    await store().releasePlace(a!);
    const c = await store().claimPlace('sync-update', user.id, 2, 60_000);
    expect(c).not.toBeNull();
    // A place whose holder died runs out.
    await store().releasePlace(b!);
    await store().claimPlace('sync-update', user.id, 2, 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store().claimPlace('sync-update', user.id, 2, 60_000)).not.toBeNull();
  });
});

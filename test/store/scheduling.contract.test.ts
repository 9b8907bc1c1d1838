import { expect, it } from 'vitest';
import { describeOnBothStores } from './store-backends.ts';

// The scheduler's lease and schedule ticks (SchedulingStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('scheduling', (store) => {
  it('gives a lease to one holder at a time until it runs out; records schedule ticks forward only', async () => {
    expect(await store().acquireLease('contract-lease', 'a', 60_000)).toBe(true);
    expect(await store().acquireLease('contract-lease', 'b', 60_000)).toBe(false);
    expect(await store().acquireLease('contract-lease', 'a', 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await store().acquireLease('contract-lease', 'b', 60_000)).toBe(true);

    const user = await store().createUser('pat');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://pat.example/',
      domain: 'pat.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: '*/5 * * * *',
    });
    await store().addProject({
      userId: user.id,
      url: 'https://unscheduled.example/',
      domain: 'unscheduled.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const scheduled = () =>
      store()
        .listScheduledProjects()
        .then((all) => all.filter((p) => p.userId === user.id));
    expect((await scheduled()).map((p) => [p.url, p.scheduledThrough])).toEqual([['https://pat.example/', null]]);
    await store().markScheduled(project.id, new Date('2026-01-01T00:10:00Z'));
    await store().markScheduled(project.id, new Date('2026-01-01T00:05:00Z'));
    expect((await scheduled())[0]!.scheduledThrough).toEqual(new Date('2026-01-01T00:10:00Z'));
  });
});

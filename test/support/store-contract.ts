import { describe, expect, it } from 'vitest';
import { lighthouseKpis, type CellCheck, type Device, type Location } from '@perfwatch/common';
import type { Store } from '@perfwatch/gateway';
import { loadLhr } from './lhr-fixtures.ts';
import { newCell } from './new-cells.ts';
import { kpiRows } from './kpi-rows.ts';
import { MAX_DATE_SHIFT_SECONDS, NoFreeSnapshotDate } from '../../gateway/src/store/snapshot-dates.ts';
import { WebhookLimitReached } from '../../gateway/src/store/store.ts';

function result(device: Device, location: Location) {
  const lighthouse = loadLhr(device, 1);
  return newCell({
    device,
    location,
    median: 1,
    runs: [],
    lighthouse,
    crux: { url: null },
    elementCount: 454,
    kpis: lighthouseKpis(lighthouse),
  });
}

/**
 * The store contract: every store (MongoDB, the embedded SQLite one) passes these, each from
 * an empty database given by `store()`.
 */
export function describeStoreContract(name: string, store: () => Store): void {
  describe(`${name}: the store contract`, () => {
    it('keeps users and token digests, finds a token by prefix, revokes it', async () => {
      const user = await store().createUser('alice');
      await expect(store().createUser('alice')).rejects.toThrow(/exists/);
      await store().addToken({ prefix: 'abcdEFGH', userId: user.id, digest: 'a'.repeat(64) });
      expect(await store().findToken('abcdEFGH')).toMatchObject({
        userId: user.id,
        digest: 'a'.repeat(64),
        revokedAt: null,
      });
      expect(await store().revokeToken('abcdEFGH')).toBe(true);
      expect(await store().revokeToken('abcdEFGH')).toBe(false);
      expect((await store().findToken('abcdEFGH'))!.revokedAt).toBeInstanceOf(Date);
      expect(await store().findToken('zzzzzzzz')).toBeNull();
    });

    it("keeps a token's expiry beside its digest (none: it never expires) and lists a user's tokens", async () => {
      const user = await store().createUser('expiring');
      const other = await store().createUser('not-expiring');
      const expiresAt = new Date('2031-05-06T07:08:09.123Z');
      await store().addToken({ prefix: 'expires1', userId: user.id, digest: 'b'.repeat(64), expiresAt });
      await store().addToken({ prefix: 'forever1', userId: user.id, digest: 'c'.repeat(64) });
      await store().addToken({ prefix: 'others01', userId: other.id, digest: 'd'.repeat(64), expiresAt: null });
      expect((await store().findToken('expires1'))!.expiresAt).toEqual(expiresAt);
      expect((await store().findToken('forever1'))!.expiresAt).toBeNull();
      await store().revokeToken('forever1');
      const listed = await store().listTokens(user.id);
      expect(listed.map((t) => [t.prefix, t.expiresAt, t.revokedAt !== null])).toEqual([
        ['expires1', expiresAt, false],
        ['forever1', null, true],
      ]);
      expect((await store().listTokens(other.id)).map((t) => t.prefix)).toEqual(['others01']);
    });

    it("replaces a project's credentials only while they are what the caller read", async () => {
      const user = await store().createUser('resealing');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://reseal.example/',
        domain: 'reseal.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      await store().setProjectAuth(project.id, 'pwsec1.old');
      expect(await store().replaceProjectAuth(project.id, 'pwsec1.old', 'pwsec1.resealed')).toBe(true);
      // Another write came between this caller's read and its write: that write stands.
      await store().setProjectAuth(project.id, 'pwsec1.set-meanwhile');
      expect(await store().replaceProjectAuth(project.id, 'pwsec1.resealed', 'pwsec1.stale')).toBe(false);
      expect((await store().findProject(user.id, project.url))!.auth).toBe('pwsec1.set-meanwhile');
      await store().setProjectAuth(project.id, null);
      expect(await store().replaceProjectAuth(project.id, 'pwsec1.set-meanwhile', 'pwsec1.stale')).toBe(false);
      expect((await store().findProject(user.id, project.url))!.auth).toBeNull();
    });

    it('scopes projects to their user', async () => {
      const bob = await store().createUser('bob');
      const carol = await store().createUser('carol');
      const project = await store().addProject({
        userId: bob.id,
        url: 'https://shop.example/',
        domain: 'shop.example',
        locations: ['london', 'tokyo'],
        defaultLocation: 'london',
        runs: 3,
        schedule: null,
      });
      await expect(store().addProject({ ...project, userId: bob.id })).rejects.toThrow(/exists/);
      expect((await store().findProject(bob.id, 'https://shop.example/'))!.id).toBe(project.id);
      expect(await store().findProject(carol.id, 'https://shop.example/')).toBeNull();
      // The same URL may be another user's project too.
      await store().addProject({ ...project, userId: carol.id });
      expect(await store().listProjects(carol.id)).toHaveLength(1);
    });

    it('stores a snapshot and reads it back at exactly its second, filtered by device and location', async () => {
      const user = await store().createUser('dave');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://dave.example/',
        domain: 'dave.example',
        locations: ['london', 'tokyo'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const date = new Date('2026-04-01T12:00:00Z');
      const missing = [
        { device: 'desktop' as const, location: 'tokyo' as const, reason: 'NO_RESPONDERS: no agent serves tokyo' },
      ];
      const stored = await store().saveSnapshot({
        project,
        updateId: 'u1',
        date,
        updateType: 'manual',
        results: [result('mobile', 'london'), result('mobile', 'tokyo'), result('desktop', 'london')],
        missing,
      });
      expect(stored).toEqual(date);

      const all = await store().findSnapshot(project.id, date);
      expect(all!.results).toHaveLength(3);
      expect(all!.results[0]!.lighthouse).toEqual(loadLhr(all!.results[0]!.device, 1));
      expect(all!.available).toHaveLength(3);
      expect(all!.missing).toEqual(missing);
      expect(await store().findSnapshotOfUpdate('u1')).toEqual({ date, missing });
      expect(await store().findSnapshotOfUpdate('never-written')).toBeNull();

      const filtered = await store().findSnapshot(project.id, date, { device: 'mobile', locations: ['tokyo'] });
      expect(filtered!.results.map((r) => `${r.device}/${r.location}`)).toEqual(['mobile/tokyo']);
      expect(filtered!.available).toHaveLength(3);
      expect(filtered!.missing).toEqual(missing);

      expect(await store().findSnapshot(project.id, new Date(date.getTime() + 1000))).toBeNull();
    });

    it("reads a snapshot's cells without their results, each result fetched from the database when asked", async () => {
      const user = await store().createUser('dora');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://dora.example/',
        domain: 'dora.example',
        locations: ['london', 'tokyo'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const date = new Date('2026-04-02T12:00:00Z');
      const results = [result('mobile', 'london'), result('mobile', 'tokyo'), result('desktop', 'london')];
      await store().saveSnapshot({ project, updateId: 'dora-1', date, updateType: 'manual', results });

      const whole = (await store().findSnapshot(project.id, date))!;
      const cells = (await store().findSnapshotCells(project.id, date))!;
      const { results: wholeResults, ...snapshot } = whole;
      expect({ ...cells, results: [] }).toEqual({ ...snapshot, results: [] });
      expect(cells.results).toHaveLength(3);
      for (const [i, cell] of cells.results.entries()) {
        const { resultJson: _read, ...shown } = cell;
        const { lighthouse: _lhr, lighthouseJson, kpis: _kpis, ...expected } = wholeResults[i]!;
        expect(shown).toEqual(expected);
        expect((await cell.resultJson()).equals(lighthouseJson)).toBe(true);
      }
      const filtered = await store().findSnapshotCells(project.id, date, { device: 'mobile', locations: ['tokyo'] });
      expect(filtered!.results.map((r) => `${r.device}/${r.location}`)).toEqual(['mobile/tokyo']);
      expect(await store().findSnapshotCells(project.id, new Date(date.getTime() + 1000))).toBeNull();

      // Read when asked, not when found: a result deleted in between is not there to read.
      await store().removeProject(user.id, project.url);
      await expect(filtered!.results[0]!.resultJson()).rejects.toThrow(/no longer stored/);
    });

    it('moves a second snapshot in the same second to the next free second', async () => {
      const user = await store().createUser('erin');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://erin.example/',
        domain: 'erin.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const date = new Date('2026-04-01T12:00:00Z');
      const first = await store().saveSnapshot({
        project,
        updateId: 'a',
        date,
        updateType: 'manual',
        results: [result('mobile', 'london')],
      });
      const second = await store().saveSnapshot({
        project,
        updateId: 'b',
        date,
        updateType: 'manual',
        results: [result('mobile', 'london')],
      });
      expect(second.getTime() - first.getTime()).toBe(1000);
      expect((await store().findSnapshot(project.id, first))!.updateId).toBe('a');
      expect((await store().findSnapshot(project.id, second))!.updateId).toBe('b');
      // Every second of the next minute taken: the next one is refused by name, nothing written.
      // Each taken at its own second (not all at `date`, which made the store try 1 + 2 + … + 60
      // seconds: minutes on FerretDB on a slow machine, for nothing more proved).
      for (let n = 2; n <= MAX_DATE_SHIFT_SECONDS; n++)
        await store().saveSnapshot({
          project,
          updateId: `u${n}`,
          date: new Date(date.getTime() + n * 1000),
          updateType: 'manual',
          results: [],
        });
      await expect(
        store().saveSnapshot({ project, updateId: 'late', date, updateType: 'manual', results: [] }),
      ).rejects.toThrow(NoFreeSnapshotDate);
      expect(await store().findSnapshotOfUpdate('late')).toBeNull();
    });

    it('writes one snapshot per update: a repeated save returns the first; a write cut short is replaced, its KPI records with it', async () => {
      const user = await store().createUser('fay');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://fay.example/',
        domain: 'fay.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const date = new Date('2026-04-02T08:00:00Z');
      const first = await store().saveSnapshot({
        project,
        updateId: 'redelivered',
        date,
        updateType: 'scheduled',
        results: [result('mobile', 'london')],
      });
      // The same update delivered again, a minute later: nothing new is written.
      const again = await store().saveSnapshot({
        project,
        updateId: 'redelivered',
        date: new Date(date.getTime() + 60_000),
        updateType: 'scheduled',
        results: [result('mobile', 'london')],
      });
      expect(again).toEqual(first);
      expect(await store().listSnapshots(project.id)).toHaveLength(1);
    });

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
      const missing = [
        { device: 'mobile' as const, location: 'tokyo' as const, reason: 'TIMEOUT: no reply from tokyo' },
      ];
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

    it("streams a user's KPI records in date, url, device, location, section, kpi order, filtered", async () => {
      const user = await store().createUser('frank');
      const other = await store().createUser('grace');
      const a = await store().addProject({
        userId: user.id,
        url: 'https://b.example/',
        domain: 'b.example',
        locations: ['london', 'tokyo'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const b = await store().addProject({
        userId: user.id,
        url: 'https://a.example/',
        domain: 'a.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const theirs = await store().addProject({
        userId: other.id,
        url: 'https://a.example/',
        domain: 'a.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const day = (d: number, h = 12) => new Date(Date.UTC(2026, 5, d, h));
      await store().saveSnapshot({
        project: a,
        updateId: '1',
        date: day(2),
        updateType: 'manual',
        results: [result('mobile', 'tokyo'), result('desktop', 'london')],
      });
      await store().saveSnapshot({
        project: b,
        updateId: '2',
        date: day(2),
        updateType: 'ci',
        results: [result('mobile', 'london')],
      });
      await store().saveSnapshot({
        project: b,
        updateId: '3',
        date: day(1),
        updateType: 'scheduled',
        results: [result('mobile', 'london')],
      });
      await store().saveSnapshot({
        project: b,
        updateId: '4',
        date: day(5),
        updateType: 'manual',
        results: [result('mobile', 'london')],
      });
      await store().saveSnapshot({
        project: theirs,
        updateId: '5',
        date: day(2),
        updateType: 'manual',
        results: [result('mobile', 'london')],
      });

      const rows = [];
      for (const row of await kpiRows(store(), { userId: user.id, from: day(1, 0), to: day(3, 0) })) rows.push(row);
      const perCell = lighthouseKpis(loadLhr('mobile', 1)).length;
      expect(rows).toHaveLength(4 * perCell);
      const keys = rows.map((r) => [r.date.toISOString(), r.url, r.device, r.location, r.section, r.kpi].join('|'));
      expect(keys).toEqual([...keys].sort());
      expect(rows[0]!.updateType).toBe('scheduled');
      expect(rows.every((r) => r.domain !== undefined && r.date < day(3, 0))).toBe(true);

      const ci = [];
      for (const row of await kpiRows(store(), {
        userId: user.id,
        from: day(1, 0),
        to: day(6, 0),
        domain: 'a.example',
        updateType: 'ci',
        sections: ['LIGHTHOUSE'],
      }))
        ci.push(row);
      expect(ci).toHaveLength(perCell);
      const none = [];
      for (const row of await kpiRows(store(), { userId: user.id, from: day(1, 0), to: day(6, 0), sections: ['CRUX'] }))
        none.push(row);
      expect(none).toHaveLength(0);

      expect((await store().listSnapshots(b.id)).map((s) => s.date.getUTCDate())).toEqual([1, 2, 5]);
      expect(await store().removeProject(user.id, b.url)).toBe(true);
      expect(await store().listSnapshots(b.id)).toEqual([]);
      const left = [];
      for (const row of await kpiRows(store(), { userId: user.id, from: day(1, 0), to: day(6, 0) })) left.push(row);
      expect(new Set(left.map((r) => r.url))).toEqual(new Set(['https://b.example/']));
      // The other user's project with the same URL is untouched.
      expect(await store().listSnapshots(theirs.id)).toHaveLength(1);
    });

    it('deletes snapshots before a date with their results and KPI records, oldest first, at most `limit`', async () => {
      const user = await store().createUser('olga');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://olga.example/',
        domain: 'olga.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const at = (d: number) => new Date(Date.UTC(2025, 0, d));
      for (const d of [1, 2, 3])
        await store().saveSnapshot({
          project,
          updateId: `olga-${d}`,
          date: at(d),
          updateType: 'scheduled',
          results: [result('mobile', 'london')],
        });
      expect(await store().deleteSnapshotsBefore(at(3), 1)).toBe(1);
      expect(await store().deleteSnapshotsBefore(at(3), 10)).toBe(1);
      expect((await store().listSnapshots(project.id)).map((s) => s.date)).toEqual([at(3)]);
      const rows = [];
      for (const row of await kpiRows(store(), { userId: user.id, from: at(1), to: at(4) })) rows.push(row);
      expect(new Set(rows.map((r) => r.date.getTime()))).toEqual(new Set([at(3).getTime()]));
    });

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

    it('keeps notes by key, the last value written', async () => {
      expect(await store().readNote('contract-note')).toBeNull();
      await store().writeNote('contract-note', 'first');
      await store().writeNote('contract-note', 'second');
      expect(await store().readNote('contract-note')).toBe('second');
    });

    it("hands out a user's slots up to the limit, frees released and expired ones, and keeps users apart", async () => {
      const user = await store().createUser('slots-a');
      const other = await store().createUser('slots-b');
      const a = await store().claimSlot('sync-update', user.id, 2, 60_000);
      const b = await store().claimSlot('sync-update', user.id, 2, 60_000);
      expect(a).not.toBeNull();
      expect(b).not.toBeNull();
      expect(await store().claimSlot('sync-update', user.id, 2, 60_000)).toBeNull();
      expect(await store().claimSlot('sync-update', other.id, 2, 60_000)).not.toBeNull();
      expect(await store().claimSlot('another-kind', user.id, 2, 60_000)).not.toBeNull();
      await store().releaseSlot(a!);
      const c = await store().claimSlot('sync-update', user.id, 2, 60_000);
      expect(c).not.toBeNull();
      // A slot whose holder died runs out.
      await store().releaseSlot(b!);
      await store().claimSlot('sync-update', user.id, 2, 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await store().claimSlot('sync-update', user.id, 2, 60_000)).not.toBeNull();
    });

    it("keeps a project's budgets, and the checks stored with each result of a snapshot", async () => {
      const user = await store().createUser('budget-owner');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://budgets.example/',
        domain: 'budgets.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      expect(project.budgets).toEqual({ budgets: {}, maxRegression: {} });
      const budgets = { budgets: { performance: 90, lcp: 2500 }, maxRegression: { 'best-practices': 5 } };
      await store().setProjectBudgets(project.id, budgets);
      const found = (await store().findProject(user.id, project.url))!;
      expect(found.budgets).toEqual(budgets);
      const checks = [
        {
          key: 'performance' as const,
          kind: 'budget' as const,
          actual: 72,
          limit: 90,
          pass: false,
          message: 'performance score 72, budget at least 90',
          state: 'failing' as const,
          confirmation: { actual: 70, pass: false },
          event: 'budget.failed' as const,
        },
      ];
      const date = new Date('2026-06-01T10:00:00Z');
      await store().saveSnapshot({
        project: found,
        updateId: 'budget-checks-1',
        date,
        updateType: 'scheduled',
        results: [{ ...result('desktop', 'london'), checks }, result('mobile', 'london')],
      });
      const snapshot = (await store().findSnapshot(project.id, date))!;
      expect(snapshot.results.find((r) => r.device === 'desktop')!.checks).toEqual(checks);
      expect(snapshot.results.find((r) => r.device === 'mobile')!.checks).toBeUndefined();
    });

    it('marks a snapshot with budget events unannounced in the write that stores it, until its events are recorded in the outbox', async () => {
      const user = await store().createUser('owed-alerts');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://owed.example/',
        domain: 'owed.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const check = {
        key: 'lcp' as const,
        kind: 'budget' as const,
        actual: 3180,
        limit: 2500,
        pass: false,
        message: 'LCP 3180 ms, budget at most 2500 ms',
        state: 'failing' as const,
      };
      const save = (updateId: string, minute: number, checks?: CellCheck[]) =>
        store().saveSnapshot({
          project,
          updateId,
          date: new Date(`2026-06-02T10:0${minute}:00Z`),
          updateType: 'manual',
          results: [{ ...result('mobile', 'london'), ...(checks ? { checks } : {}) }],
        });
      const before = new Date();
      const failed = await save('owed-failed', 1, [{ ...check, event: 'budget.failed' }]);
      const after = new Date();
      // Failing still, announced before: no event, nothing owed; nor by a snapshot without budgets.
      await save('owed-quiet', 2, [check]);
      await save('owed-none', 3);
      const mine = async (storedBefore: Date) =>
        (await store().listUnannouncedSnapshots(storedBefore, 1_000)).filter((s) => s.userId === user.id);
      const owed = await mine(new Date(after.getTime() + 60_000));
      expect(owed).toEqual([
        {
          projectId: project.id,
          userId: user.id,
          url: project.url,
          updateId: 'owed-failed',
          date: failed,
          storedAt: expect.any(Date),
        },
      ]);
      expect(owed[0]!.storedAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(owed[0]!.storedAt.getTime()).toBeLessThanOrEqual(after.getTime());
      // Stored after the time asked for (a live writer may be between its save and its outbox write).
      expect(await mine(new Date(before.getTime() - 1))).toEqual([]);
      await store().markSnapshotAnnounced('owed-failed');
      expect(await mine(new Date(after.getTime() + 60_000))).toEqual([]);
      // The update's job delivered again finds its snapshot stored: nothing is owed again.
      expect(await save('owed-failed', 1, [{ ...check, event: 'budget.failed' }])).toEqual(failed);
      expect(await mine(new Date(Date.now() + 60_000))).toEqual([]);
    });

    it('keeps webhooks per user and an outbox of deliveries: stored once per id, claimed under a lease, recorded, listed newest first', async () => {
      const user = await store().createUser('hook-owner');
      const other = await store().createUser('hook-other');
      const hook = await store().addWebhook({
        userId: user.id,
        targetUrl: 'https://hooks.example/a',
        projectUrl: null,
        format: 'json',
        secret: 'pwhs_secret',
      });
      await store().addWebhook({
        userId: other.id,
        targetUrl: 'https://hooks.example/b',
        projectUrl: 'https://shop.example/',
        format: 'slack',
        secret: 'pwhs_other',
      });
      expect((await store().listWebhooks(user.id)).map((h) => [h.id, h.targetUrl, h.secret, h.projectUrl])).toEqual([
        [hook.id, 'https://hooks.example/a', 'pwhs_secret', null],
      ]);

      const t0 = new Date('2026-06-01T10:00:00Z');
      const first = {
        id: 'd1',
        webhookId: hook.id,
        userId: user.id,
        event: 'budget.failed',
        body: '{"a":1}',
        createdAt: t0,
      };
      await store().enqueueDeliveries([
        first,
        { ...first, id: 'd2', event: 'budget.recovered', body: '{"b":2}', createdAt: new Date(t0.getTime() + 1000) },
      ]);
      // The same event announced again: still one delivery, its state untouched.
      await store().enqueueDeliveries([{ ...first, body: '{"changed":true}' }]);

      const claimed = await store().claimDeliveries(new Date(t0.getTime() + 5_000), 10, 60_000);
      expect(claimed.map((d) => [d.id, d.body, d.status, d.attempts]).sort()).toEqual([
        ['d1', '{"a":1}', 'pending', 0],
        ['d2', '{"b":2}', 'pending', 0],
      ]);
      // Claimed: nobody else takes them until the lease runs out.
      expect(await store().claimDeliveries(new Date(t0.getTime() + 6_000), 10, 60_000)).toEqual([]);

      await store().recordDeliveryAttempt('d1', {
        status: 'pending',
        error: 'HTTP 503',
        nextAttemptAt: new Date(t0.getTime() + 10_000),
      });
      await store().recordDeliveryAttempt('d2', { status: 'delivered', at: new Date(t0.getTime() + 7_000) });
      const again = await store().claimDeliveries(new Date(t0.getTime() + 10_000), 10, 60_000);
      expect(again.map((d) => [d.id, d.attempts, d.lastError])).toEqual([['d1', 1, 'HTTP 503']]);
      await store().recordDeliveryAttempt('d1', { status: 'failed', error: 'gave up' });

      const listed = await store().listDeliveries(hook.id, 10);
      expect(listed.map((d) => [d.id, d.status, d.attempts, d.lastError])).toEqual([
        ['d2', 'delivered', 1, null],
        ['d1', 'failed', 2, 'gave up'],
      ]);
      expect(listed[0]!.deliveredAt).toEqual(new Date(t0.getTime() + 7_000));
      expect(await store().claimDeliveries(new Date(t0.getTime() + 3_600_000), 10, 60_000)).toEqual([]);

      // Another user cannot remove it; its owner removes it with its deliveries.
      expect(await store().removeWebhook(other.id, hook.id)).toBe(false);
      expect(await store().removeWebhook(user.id, hook.id)).toBe(true);
      expect(await store().listWebhooks(user.id)).toEqual([]);
      expect(await store().listDeliveries(hook.id, 10)).toEqual([]);
    });

    it("bounds a user's webhooks (racing adds included), finds one by id, leaves busy users' deliveries unclaimed, prunes finished ones", async () => {
      const user = await store().createUser('hook-bounded');
      const other = await store().createUser('hook-bounded-other');
      const hook = (userId: string, n: number) => ({
        userId,
        targetUrl: `https://hooks.example/${n}`,
        projectUrl: null,
        format: 'json' as const,
        secret: `pwhs_${n}`,
      });
      // Ten adds at once under a limit of 3: never more than 3 stored, the rest refused (the
      // MongoDB store may refuse all ten, each seeing the others' inserts before their removal).
      const adds = await Promise.allSettled(
        Array.from({ length: 10 }, (_, n) => store().addWebhook(hook(user.id, n), 3)),
      );
      const kept = adds.filter((a) => a.status === 'fulfilled');
      expect(kept.length).toBeLessThanOrEqual(3);
      for (const refused of adds.filter((a) => a.status === 'rejected'))
        expect(refused.reason).toBeInstanceOf(WebhookLimitReached);
      expect(await store().listWebhooks(user.id)).toHaveLength(kept.length);
      while ((await store().listWebhooks(user.id)).length < 3) await store().addWebhook(hook(user.id, 10), 3);
      await expect(store().addWebhook(hook(user.id, 11), 3)).rejects.toBeInstanceOf(WebhookLimitReached);
      const hooks = await store().listWebhooks(user.id);
      expect(hooks).toHaveLength(3);
      const otherHook = await store().addWebhook(hook(other.id, 12), 3);

      const found = await store().findWebhook(hooks[0]!.id);
      expect(found).toEqual(hooks[0]);
      expect(await store().findWebhook('0123456789abcdef01234567')).toBeNull();
      await store().setWebhookSecret(hooks[0]!.id, 'pwsec1.sealed');
      expect((await store().findWebhook(hooks[0]!.id))!.secret).toBe('pwsec1.sealed');

      const t0 = new Date('2026-07-01T10:00:00Z');
      const delivery = (id: string, webhookId: string, userId: string, ageMs: number) => ({
        id,
        webhookId,
        userId,
        event: 'update.failed',
        body: '{}',
        createdAt: new Date(t0.getTime() - ageMs),
      });
      await store().enqueueDeliveries([
        delivery('bounded-a1', hooks[0]!.id, user.id, 3_000),
        delivery('bounded-a2', hooks[0]!.id, user.id, 2_000),
        delivery('bounded-b1', otherHook.id, other.id, 1_000),
      ]);
      // The user with enough in flight is skipped, however early its deliveries are due.
      const claimed = await store().claimDeliveries(t0, 10, 60_000, [user.id]);
      expect(claimed.map((d) => d.id)).toEqual(['bounded-b1']);
      expect((await store().claimDeliveries(t0, 1, 60_000, [])).map((d) => d.id)).toEqual(['bounded-a1']);

      // Finished deliveries older than the cut are pruned; pending ones stay, however old.
      await store().recordDeliveryAttempt('bounded-a1', { status: 'delivered', at: t0 });
      await store().recordDeliveryAttempt('bounded-b1', { status: 'failed', error: 'HTTP 410' });
      expect(await store().deleteDeliveriesBefore(new Date(t0.getTime() - 1_500))).toBe(1);
      expect((await store().listDeliveries(hooks[0]!.id, 10)).map((d) => d.id)).toEqual(['bounded-a2']);
      expect((await store().listDeliveries(otherHook.id, 10)).map((d) => d.id)).toEqual(['bounded-b1']);
      expect(await store().deleteDeliveriesBefore(t0)).toBe(1);
      expect(await store().listDeliveries(otherHook.id, 10)).toEqual([]);
    });

    it("keeps a project's annotations by date, in a range, and removes them with the project", async () => {
      const user = await store().createUser('annotator');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://notes.example/',
        domain: 'notes.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const at = (h: number) => new Date(Date.UTC(2026, 5, 1, h));
      await store().addAnnotation({
        projectId: project.id,
        date: at(12),
        text: 'deploy 2',
        link: 'https://git.example/pr/2',
      });
      await store().addAnnotation({ projectId: project.id, date: at(9), text: 'deploy 1', link: null });
      expect((await store().listAnnotations(project.id)).map((a) => [a.text, a.date, a.link])).toEqual([
        ['deploy 1', at(9), null],
        ['deploy 2', at(12), 'https://git.example/pr/2'],
      ]);
      expect((await store().listAnnotations(project.id, { from: at(10), to: at(13) })).map((a) => a.text)).toEqual([
        'deploy 2',
      ]);
      expect(await store().removeProject(user.id, project.url)).toBe(true);
      expect(await store().listAnnotations(project.id)).toEqual([]);
    });

    it('pages, counts and removes annotations; retention deletes the old ones and finished updates', async () => {
      const user = await store().createUser('pager');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://pages.example/',
        domain: 'pages.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const at = (h: number) => new Date(Date.UTC(2026, 5, 2, h));
      const added = [];
      for (const h of [1, 2, 3, 4, 5])
        added.push(await store().addAnnotation({ projectId: project.id, date: at(h), text: `n${h}`, link: null }));
      expect(await store().countAnnotations(project.id)).toBe(5);
      // The newest of the range, still in date order.
      expect((await store().listAnnotations(project.id, { limit: 2 })).map((a) => a.text)).toEqual(['n4', 'n5']);
      expect((await store().listAnnotations(project.id, { to: at(4), limit: 2 })).map((a) => a.text)).toEqual([
        'n2',
        'n3',
      ]);
      expect(await store().removeAnnotation(project.id, added[2]!.id)).toBe(true);
      expect(await store().removeAnnotation(project.id, added[2]!.id)).toBe(false);
      // Another project's id removes nothing.
      expect(await store().removeAnnotation('0'.repeat(24), added[0]!.id)).toBe(false);
      expect(await store().deleteAnnotationsBefore(at(3))).toBe(2);
      expect((await store().listAnnotations(project.id)).map((a) => a.text)).toEqual(['n4', 'n5']);

      const update = (id: string) =>
        store().createUpdate({
          id,
          userId: user.id,
          projectId: project.id,
          url: project.url,
          devices: ['mobile'],
          locations: ['london'],
          updateType: 'manual',
          runs: 1,
        });
      const finished = '7a1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';
      const open = '7b1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';
      await update(finished);
      await update(open);
      await store().setUpdateState(finished, { status: 'failed', reason: 'test' });
      // Only finished updates go, and only once past the date.
      expect(await store().deleteFinishedUpdatesBefore(new Date(Date.now() - 60_000))).toBe(0);
      expect(await store().deleteFinishedUpdatesBefore(new Date(Date.now() + 60_000))).toBeGreaterThanOrEqual(1);
      expect(await store().findUpdate(user.id, finished)).toBeNull();
      expect(await store().findUpdate(user.id, open)).not.toBeNull();
    });

    it('finds snapshots whose KPI records are of an older version and replaces their records section by section', async () => {
      const user = await store().createUser('kpi-versions');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://kpis.example/',
        domain: 'kpis.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const old = new Date('2026-04-01T10:00:00Z');
      const current = new Date('2026-04-01T11:00:00Z');
      const legacy = [
        { section: 'LIGHTHOUSE' as const, kpi: 'performance', data: { score: 50 } },
        { section: 'SECURITY' as const, kpi: 'headers', data: { hsts: true } },
      ];
      await store().saveSnapshot({
        project,
        updateId: 'kpi-old',
        date: old,
        updateType: 'manual',
        results: [{ ...result('mobile', 'london'), kpis: legacy }],
      });
      await store().saveSnapshot({
        project,
        updateId: 'kpi-new',
        date: current,
        updateType: 'manual',
        results: [result('mobile', 'london')],
        kpiVersion: 2,
      });
      const mine = async () =>
        (await store().listSnapshotsBelowKpiVersion(2, 1_000)).filter((s) => s.projectId === project.id);
      expect(await mine()).toEqual([{ projectId: project.id, date: old }]);

      const replacement = {
        sections: ['LIGHTHOUSE'],
        results: [
          {
            device: 'mobile',
            location: 'london',
            kpis: [{ section: 'LIGHTHOUSE', kpi: 'performance', data: { score: 50, lcp: 2100 } }],
          },
        ],
        version: 2,
      } as const;
      await store().replaceSnapshotKpis({ projectId: project.id, date: old }, replacement);
      // And again: a replacement repeated leaves the same records.
      await store().replaceSnapshotKpis({ projectId: project.id, date: old }, replacement);
      expect(await mine()).toEqual([]);
      const rows = [];
      for (const row of await kpiRows(store(), { userId: user.id, from: old, to: new Date(old.getTime() + 1_000) }))
        rows.push([row.section, row.kpi, row.data, row.updateType, row.url]);
      expect(rows).toEqual([
        ['LIGHTHOUSE', 'performance', { score: 50, lcp: 2100 }, 'manual', project.url],
        ['SECURITY', 'headers', { hsts: true }, 'manual', project.url],
      ]);
    });

    it("keeps a project's field-data history beside its snapshots: replaced whole, kept by the orphan sweep, removed with the project", async () => {
      const user = await store().createUser('field-history');
      const project = await store().addProject({
        userId: user.id,
        url: 'https://history.example/',
        domain: 'history.example',
        locations: ['tokyo'],
        defaultLocation: 'tokyo',
        runs: 1,
        schedule: null,
      });
      const week = (day: number, lcp: string) => ({
        date: new Date(Date.UTC(2026, 9, day)),
        device: 'mobile' as const,
        kpis: [{ section: 'CRUX' as const, kpi: 'url_lcp_p75', data: lcp }],
      });
      await store().saveFieldHistory(project, [week(4, '2900'), week(11, '2800')]);
      await store().saveFieldHistory(project, [week(4, '2700'), week(11, '2600'), week(18, '2500')]);
      const read = async () => {
        const rows: Array<[string, string, unknown, string]> = [];
        for (const r of await kpiRows(store(), {
          userId: user.id,
          from: new Date(Date.UTC(2026, 0, 1)),
          to: new Date(Date.UTC(2027, 0, 1)),
        }))
          rows.push([r.date.toISOString().slice(0, 10), r.kpi, r.data, r.location]);
        return rows;
      };
      expect(await read()).toEqual([
        ['2026-10-04', 'url_lcp_p75', '2700', 'tokyo'],
        ['2026-10-11', 'url_lcp_p75', '2600', 'tokyo'],
        ['2026-10-18', 'url_lcp_p75', '2500', 'tokyo'],
      ]);
      // No snapshot owns them, and the sweep of records of unfinished snapshots leaves them be.
      await store().deleteOrphans(new Date(Date.now() + 3_600_000));
      expect(await read()).toHaveLength(3);
      await store().removeProject(user.id, project.url);
      expect(await read()).toEqual([]);
    });
  });
}

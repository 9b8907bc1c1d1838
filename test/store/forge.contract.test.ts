import { expect, it } from 'vitest';
import type { Store } from '@perfwatch/gateway';
import { DuplicateError, type ForgeLinkRecord, type NewForgeEvent } from '../../gateway/src/store/store.ts';
import { removeStalePreviews } from '../../gateway/src/forge/preview-retention.ts';
import { describeOnBothStores, storedResult } from './store-backends.ts';

// Repository links, preview marks and forge events (ForgeStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.

async function projectOf(store: Store, user: string, url: string) {
  const owner = await store.createUser(user);
  return store.addProject({
    userId: owner.id,
    url,
    domain: new URL(url).hostname,
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
}

const linkOf = (projectId: string, userId: string, changes: Partial<ForgeLinkRecord> = {}): ForgeLinkRecord => ({
  projectId,
  userId,
  forge: 'github',
  repository: 'Acme/Shop',
  repositoryKey: 'acme/shop',
  apiUrl: 'https://api.github.com',
  tokenSealed: 'pwsec1.token',
  webhookSecretSealed: 'pwsec1.secret',
  webhookSecretDigest: null,
  previewUrl: 'https://pr-{pullRequest}.preview.example',
  defaultBranch: 'main',
  updatedAt: new Date(Date.UTC(2026, 10, 1, 12)),
  ...changes,
});

const eventOf = (key: string, linkProjectId: string, previewProjectId: string, minute = 0): NewForgeEvent => ({
  key,
  forge: 'github',
  linkProjectId,
  previewProjectId,
  previewUrl: 'https://pr-7.preview.example/',
  revision: { commit: 'a'.repeat(40), branch: 'feature/x', pullRequest: 7 },
  receivedAt: new Date(Date.UTC(2026, 10, 1, 12, minute)),
});

describeOnBothStores('forge', (store) => {
  it('keeps one link per project, replaced by the next, found by forge and repository key, removed', async () => {
    const project = await projectOf(store(), 'linker', 'https://shop.example/');
    expect(await store().findForgeLink(project.id)).toBeNull();
    await store().setForgeLink(linkOf(project.id, project.userId));
    const replaced = linkOf(project.id, project.userId, { defaultBranch: 'trunk', previewUrl: null });
    await store().setForgeLink(replaced);
    expect(await store().findForgeLink(project.id)).toEqual(replaced);
    expect(await store().listForgeLinks('github', ['acme/shop'])).toEqual([replaced]);
    expect(await store().listForgeLinks('gitea', ['acme/shop'])).toEqual([]);
    expect(await store().listForgeLinks('github', ['acme/other'])).toEqual([]);
    expect(await store().listForgeLinks('github', [])).toEqual([]);
    // A rotation writes only over the token it read.
    const resealed = { tokenSealed: 'pwsec1.token-2', webhookSecretSealed: 'pwsec1.secret-2' };
    expect(await store().replaceForgeLinkSecrets(project.id, 'pwsec1.stale', resealed)).toBe(false);
    expect(await store().replaceForgeLinkSecrets(project.id, 'pwsec1.token', resealed)).toBe(true);
    expect(await store().findForgeLink(project.id)).toEqual({ ...replaced, ...resealed });
    expect(await store().removeForgeLink(project.id)).toBe(true);
    expect(await store().removeForgeLink(project.id)).toBe(false);
    expect(await store().findForgeLink(project.id)).toBeNull();
  });

  it("removing a project removes its link and its preview mark, and no other project's", async () => {
    const gone = await projectOf(store(), 'removed', 'https://gone.example/');
    const kept = await projectOf(store(), 'kept', 'https://kept.example/');
    await store().setForgeLink(linkOf(gone.id, gone.userId));
    await store().setForgeLink(linkOf(kept.id, kept.userId));
    await store().markPreviewProject(gone.id, kept.id);
    expect(await store().removeProject(gone.userId, gone.url)).toBe(true);
    expect(await store().findForgeLink(gone.id)).toBeNull();
    expect(await store().previewOf(gone.id)).toBeNull();
    expect(await store().findForgeLink(kept.id)).not.toBeNull();
  });

  it('finds GitLab links by any of the keys a payload names (path or id), with the token digest', async () => {
    const a = await projectOf(store(), 'gitlab-a', 'https://a.example/');
    const b = await projectOf(store(), 'gitlab-b', 'https://b.example/');
    const gitlab = { forge: 'gitlab', webhookSecretSealed: null, webhookSecretDigest: 'f'.repeat(64) } as const;
    await store().setForgeLink(
      linkOf(a.id, a.userId, { ...gitlab, repository: 'Group/Sub/App', repositoryKey: 'group/sub/app' }),
    );
    await store().setForgeLink(linkOf(b.id, b.userId, { ...gitlab, repository: '4242', repositoryKey: '4242' }));
    const found = await store().listForgeLinks('gitlab', ['group/sub/app', '4242']);
    expect(found.map((link) => link.projectId).sort()).toEqual([a.id, b.id].sort());
    expect(
      found.every((link) => link.webhookSecretSealed === null && link.webhookSecretDigest === 'f'.repeat(64)),
    ).toBe(true);
  });

  it('marks a preview project once: the first mark stands', async () => {
    const linked = await projectOf(store(), 'previewer', 'https://prod.example/');
    const preview = await projectOf(store(), 'previewer-2', 'https://pr-1.preview.example/');
    expect(await store().previewOf(preview.id)).toBeNull();
    await store().markPreviewProject(preview.id, linked.id);
    await store().markPreviewProject(preview.id, preview.id);
    expect(await store().previewOf(preview.id)).toBe(linked.id);
    expect(await store().previewOf(linked.id)).toBeNull();
  });

  it('stores an event once by its key: a second add of the same key is a DuplicateError, even at once', async () => {
    const linked = await projectOf(store(), 'events', 'https://events.example/');
    const event = eventOf('github:deployment_status:1', linked.id, linked.id);
    const both = await Promise.allSettled([store().addForgeEvent(event), store().addForgeEvent(event)]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = both.find((r) => r.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(DuplicateError);
    await expect(store().addForgeEvent(event)).rejects.toBeInstanceOf(DuplicateError);
    expect(await store().findForgeEvent(event.key)).toEqual({
      ...event,
      updateId: null,
      reportedAt: null,
      reportAttempts: 0,
      lastReportError: null,
      nextAttemptAt: null,
    });
    await store().removeForgeEvent(event.key);
    expect(await store().findForgeEvent(event.key)).toBeNull();
    await store().addForgeEvent(event);
  });

  it('lists the queued, unreported events that are due, oldest first; reports and failures move them', async () => {
    const linked = await projectOf(store(), 'reporter', 'https://reporter.example/');
    const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 12, minute));
    for (const [key, minute] of [
      ['r:3', 3],
      ['r:1', 1],
      ['r:2', 2],
      ['r:unqueued', 0],
    ] as const)
      await store().addForgeEvent(eventOf(key, linked.id, linked.id, minute));
    for (const key of ['r:1', 'r:2', 'r:3']) await store().setForgeEventUpdate(key, `update-${key}`);
    const due = async (now = at(30)) =>
      (await store().listUnreportedForgeEvents(10, now)).filter((e) => e.key.startsWith('r:')).map((e) => e.key);
    expect(await due()).toEqual(['r:1', 'r:2', 'r:3']);
    expect((await store().listUnreportedForgeEvents(1, at(30))).map((e) => e.key)).toHaveLength(1);
    await store().markForgeEventReported('r:1', at(31));
    await store().recordForgeReportFailure('r:2', `HTTP 502 ${'x'.repeat(5000)}`, at(40));
    await store().recordForgeReportFailure('r:2', 'HTTP 403 rate limited', at(45));
    expect(await due()).toEqual(['r:3']);
    expect(await due(at(45))).toEqual(['r:2', 'r:3']);
    // Deferred while its preview is measured: not due before then, and no attempt counted.
    await store().deferForgeEvent('r:3', at(50));
    expect(await due(at(45))).toEqual(['r:2']);
    expect(await due(at(50))).toEqual(['r:2', 'r:3']);
    expect((await store().findForgeEvent('r:3'))?.reportAttempts).toBe(0);
    const failed = (await store().findForgeEvent('r:2'))!;
    expect([failed.reportAttempts, failed.lastReportError, failed.nextAttemptAt]).toEqual([
      2,
      'HTTP 403 rate limited',
      at(45),
    ]);
    const reported = (await store().findForgeEvent('r:1'))!;
    expect([reported.reportedAt, reported.updateId]).toEqual([at(31), 'update-r:1']);
    // Retention: received before, reported or not.
    expect(await store().deleteForgeEventsBefore(at(2))).toBeGreaterThanOrEqual(2);
    expect(await store().findForgeEvent('r:1')).toBeNull();
    expect(await store().findForgeEvent('r:unqueued')).toBeNull();
    expect((await store().findForgeEvent('r:2'))?.key).toBe('r:2');
  });

  it("one claim per attempt: a claimed attempt is no one else's; a reported or retried event's old attempt is no one's", async () => {
    const linked = await projectOf(store(), 'claims', 'https://claims.example/');
    const at = (minute: number) => new Date(Date.UTC(2026, 10, 2, 12, minute));
    await store().addForgeEvent(eventOf('c:1', linked.id, linked.id, 0));
    await store().setForgeEventUpdate('c:1', 'update-c:1');
    const first = (await store().findForgeEvent('c:1'))!;
    const both = await Promise.all([
      store().claimForgeEvent(first, at(1), at(6)),
      store().claimForgeEvent(first, at(1), at(6)),
    ]);
    expect(both.filter(Boolean)).toHaveLength(1);
    expect(await store().claimForgeEvent(first, at(5), at(10))).toBe(false);
    // The attempt failed and is due again later: the next attempt is claimed once, the old one never.
    await store().recordForgeReportFailure('c:1', 'HTTP 429', at(8));
    const second = (await store().findForgeEvent('c:1'))!;
    expect(second.reportAttempts).toBe(1);
    expect(await store().claimForgeEvent(first, at(9), at(14))).toBe(false);
    expect(await store().claimForgeEvent(second, at(9), at(14))).toBe(true);
    expect(await store().claimForgeEvent(second, at(10), at(15))).toBe(false);
    await store().markForgeEventReported('c:1', at(11));
    expect(await store().claimForgeEvent({ ...second, reportAttempts: 2 }, at(20), at(25))).toBe(false);
    expect(await store().claimForgeEvent({ key: 'c:unknown', reportAttempts: 0 }, at(20), at(25))).toBe(false);
  });

  it('retention removes preview projects whose last snapshot is past it, and no other project', async () => {
    const linked = await projectOf(store(), 'previews', 'https://previews.example/');
    const add = (url: string) =>
      store().addProject({
        userId: linked.userId,
        url,
        domain: new URL(url).hostname,
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
    const [stale, measured, own] = [
      await add('https://pr-1.previews.example/'),
      await add('https://pr-2.previews.example/'),
      await add('https://staging.previews.example/'),
    ];
    for (const preview of [stale, measured]) await store().markPreviewProject(preview.id, linked.id);
    const before = new Date(Date.now() + 86_400_000);
    await store().saveSnapshot({
      project: measured,
      updateId: 'preview-2',
      date: new Date(before.getTime() + 60_000),
      updateType: 'ci',
      results: [storedResult('mobile', 'london')],
    });
    // At least this user's stale one (the store is shared with the cases above, which mark previews too).
    expect(await removeStalePreviews(store(), before)).toBeGreaterThanOrEqual(1);
    const left = (await store().listProjects(linked.userId)).map((p) => p.url).sort();
    expect(left).toEqual([linked.url, measured.url, own.url].sort());
    expect(await removeStalePreviews(store(), before)).toBe(0);
  });
});

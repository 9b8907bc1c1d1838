import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { AuditEntryRecord, NewAuditEntry } from '../../gateway/src/audit-log/store/audit-log-store.ts';
import { describeOnBothStores } from './store-backends.ts';

// Each organisation's audit log (AuditLogStore): appended, listed newest first a page at a time.
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('audit-log', (store) => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 26, 8, minute));
  const entry = (orgId: string, minute: number, target: string, over: Partial<NewAuditEntry> = {}): NewAuditEntry => ({
    orgId,
    at: at(minute),
    actor: { userId: orgId, via: 'token', tokenPrefix: 'pw_abcdef12' },
    action: 'project.created',
    target,
    details: {},
    ...over,
  });
  /** Every entry of the organisation, page by page of `limit`, each page after the last one's (at, id). */
  async function everyPage(orgId: string, limit: number, action?: AuditEntryRecord['action']) {
    const pages: string[][] = [];
    let before: { at: Date; id: string } | undefined;
    for (;;) {
      const page = await store().listAuditEntries(orgId, { limit, before, action });
      if (page.length === 0) return pages;
      pages.push(page.map((e) => e.target));
      const last = page.at(-1)!;
      before = { at: last.at, id: last.id };
    }
  }
  /** An organisation's id as both stores make them (24 hex digits); the log needs no more of it. */
  const newOrg = () => randomBytes(12).toString('hex');

  it('keeps what was appended, actor and details as they were, and lists it the newest first', async () => {
    const org = newOrg();
    const written = await store().appendAuditEntry(
      entry(org, 1, 'https://shop.example/', {
        actor: { userId: org, via: 'session', tokenPrefix: null },
        action: 'credentials.set',
        details: { cookies: 2, steps: 0, sso: false, note: null, field: 'auth' },
      }),
    );
    await store().appendAuditEntry(entry(org, 3, 'https://b.example/', { action: 'project.removed' }));
    await store().appendAuditEntry(entry(org, 2, 'https://a.example/'));
    const listed = await store().listAuditEntries(org, { limit: 10 });
    expect(listed.map((e) => [e.target, e.at])).toEqual([
      ['https://b.example/', at(3)],
      ['https://a.example/', at(2)],
      ['https://shop.example/', at(1)],
    ]);
    expect(listed[2]).toEqual(written);
    expect(listed[2]).toMatchObject({
      orgId: org,
      actor: { userId: org, via: 'session', tokenPrefix: null },
      action: 'credentials.set',
      details: { cookies: 2, steps: 0, sso: false, note: null, field: 'auth' },
    });
    expect(listed[0]!.actor).toEqual({ userId: org, via: 'token', tokenPrefix: 'pw_abcdef12' });
  });

  it('pages by (at, id): entries of the same millisecond each come once, in the same order every time', async () => {
    const org = newOrg();
    // Seven at one instant, five at others: a cursor of the time alone would skip or repeat some.
    for (let i = 0; i < 12; i++) await store().appendAuditEntry(entry(org, i < 7 ? 5 : i, `t${i}`));
    const whole = (await store().listAuditEntries(org, { limit: 100 })).map((e) => e.target);
    expect(whole).toHaveLength(12);
    expect(whole.slice(0, 5)).toEqual(['t11', 't10', 't9', 't8', 't7']);
    // Those of one instant: the last appended first.
    expect(whole.slice(5)).toEqual(['t6', 't5', 't4', 't3', 't2', 't1', 't0']);
    for (const limit of [1, 3, 5, 12]) {
      const pages = await everyPage(org, limit);
      expect(pages.flat()).toEqual(whole);
      expect(pages.every((page) => page.length <= limit)).toBe(true);
    }
  });

  it("lists only the organisation's own entries, and only an action's when asked", async () => {
    const mine = newOrg();
    const theirs = newOrg();
    await store().appendAuditEntry(entry(mine, 1, 'mine-1'));
    await store().appendAuditEntry(entry(theirs, 2, 'theirs-1'));
    await store().appendAuditEntry(entry(mine, 3, 'mine-2', { action: 'webhook.added' }));
    await store().appendAuditEntry(entry(mine, 4, 'mine-3'));
    expect((await store().listAuditEntries(mine, { limit: 10 })).map((e) => e.target)).toEqual([
      'mine-3',
      'mine-2',
      'mine-1',
    ]);
    expect((await store().listAuditEntries(theirs, { limit: 10 })).map((e) => e.target)).toEqual(['theirs-1']);
    expect(await everyPage(mine, 1, 'project.created')).toEqual([['mine-3'], ['mine-1']]);
    expect(await store().listAuditEntries(mine, { limit: 10, action: 'token.revoked' })).toEqual([]);
  });

  it("bounds a page at 201 entries (the API's largest and one more) whatever is asked, and has no way to change or remove one", async () => {
    const org = newOrg();
    await Promise.all(Array.from({ length: 205 }, (_, i) => store().appendAuditEntry(entry(org, i % 60, `n${i}`))));
    expect(await store().listAuditEntries(org, { limit: 10_000 })).toHaveLength(201);
    expect(await store().listAuditEntries(org, { limit: 0 })).toHaveLength(1);
    const methods = Object.keys(store()).filter((name) => /audit/i.test(name));
    expect(methods.sort()).toEqual(['appendAuditEntry', 'listAuditEntries']);
  });
});

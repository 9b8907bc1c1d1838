import { describe, expect, it } from 'vitest';
import { auditLogCursor } from '@perfwatch/common';
import type { Caller } from '../http/auth.ts';
import { auditEntry, createAuditLog, storedDetails } from './audit-log.ts';
import { auditLogPage } from './audit-log-route.ts';
import { hostOf, settingDetails } from './audit-details.ts';
import type { AuditEntryRecord, NewAuditEntry } from './store/audit-log-store.ts';

const byToken: Caller = {
  orgId: 'a'.repeat(24),
  userId: 'b'.repeat(24),
  role: 'admin',
  projects: null,
  via: { kind: 'token', prefix: 'Ab3xY9_q', scope: 'admin' },
};
const bySession: Caller = { ...byToken, via: { kind: 'session' } };
const at = new Date(Date.UTC(2026, 10, 26, 8, 14, 3, 512));

describe('an audit entry', () => {
  it("is the caller's organisation's, with the member and the token's public prefix or the session", () => {
    const entry = auditEntry(byToken, { action: 'project.removed', target: 'https://shop.example/' }, at);
    expect(entry).toEqual({
      orgId: byToken.orgId,
      at,
      actor: { userId: byToken.userId, via: 'token', tokenPrefix: 'Ab3xY9_q' },
      action: 'project.removed',
      target: 'https://shop.example/',
      details: {},
    });
    expect(auditEntry(bySession, { action: 'budgets.replaced', target: 'x' }, at).actor).toEqual({
      userId: byToken.userId,
      via: 'session',
      tokenPrefix: null,
    });
  });

  it('refuses a detail whose name would hold a secret, before anything is written', async () => {
    for (const name of ['secret', 'webhookSecret', 'password', 'token', 'digest', 'value'])
      expect(() => storedDetails({ [name]: 'x' }), name).toThrow(/would hold a secret/);
    const written: NewAuditEntry[] = [];
    const log = createAuditLog({
      store: {
        appendAuditEntry: async (entry) => {
          written.push(entry);
          return { id: '1', ...entry };
        },
      },
    });
    await expect(
      log.record(byToken, { action: 'credentials.set', target: 'x', details: { password: 'p' } }),
    ).rejects.toThrow();
    expect(written).toEqual([]);
    // Counts, names of settings and a token's prefix are not secrets.
    expect(storedDetails({ cookies: 2, loginSteps: 1, tokenPrefix: 'Ab3xY9_q', scope: 'ci' })).toEqual({
      cookies: 2,
      loginSteps: 1,
      tokenPrefix: 'Ab3xY9_q',
      scope: 'ci',
    });
  });

  it('keeps details short: 20 at most, a string clipped at 500 characters', () => {
    expect(storedDetails({ text: 'x'.repeat(2_000) })['text']).toHaveLength(500);
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`d${i}`, i]));
    expect(() => storedDetails(many)).toThrow(/at most 20/);
  });

  it("names a webhook's host alone, and settings as given", () => {
    expect(hostOf('https://hooks.slack.com/services/T0/B0/s3cr3t?x=1')).toBe('hooks.slack.com');
    expect(settingDetails({ locations: ['london', 'tokyo'], runs: 2, schedule: null, crux: undefined })).toEqual({
      locations: 'london,tokyo',
      runs: 2,
      schedule: null,
    });
  });
});

describe('a page of the log', () => {
  const record = (id: string, ms: number): AuditEntryRecord => ({
    id,
    orgId: byToken.orgId,
    at: new Date(ms),
    actor: { userId: byToken.userId, via: 'token', tokenPrefix: 'Ab3xY9_q' },
    action: 'annotation.added',
    target: 'https://shop.example/',
    details: { id: '7' },
  });

  it('names each actor as the user is named now (null once gone); `next` only when an entry was left out', () => {
    const names = new Map([[byToken.userId, 'alice']]);
    const full = auditLogPage([record('c'.repeat(24), 3), record('d'.repeat(24), 2)], 2, names);
    expect(full.next).toBeUndefined();
    expect(full.entries[0]).toEqual({
      id: 'c'.repeat(24),
      at: '1970-01-01T00:00:00.003Z',
      actor: { userId: byToken.userId, name: 'alice', via: 'token', tokenPrefix: 'Ab3xY9_q' },
      action: 'annotation.added',
      target: 'https://shop.example/',
      details: { id: '7' },
    });
    const more = auditLogPage([record('c'.repeat(24), 3), record('d'.repeat(24), 2)], 1, new Map());
    expect(more.entries.map((e) => [e.id, e.actor.name])).toEqual([['c'.repeat(24), null]]);
    expect(more.next).toBe(auditLogCursor({ at: new Date(3), id: 'c'.repeat(24) }));
  });
});

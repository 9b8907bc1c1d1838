import { describe, expect, it } from 'vitest';
import { auditLogBodySchema, auditLogCursor, auditLogQuerySchema, parseAuditLogCursor } from './audit-log-requests.ts';

describe('/v1/audit-log requests', () => {
  const cursor = { at: new Date(Date.UTC(2026, 10, 26, 8, 14, 3, 512)), id: '0123456789abcdef01234567' };

  it('reads back only a cursor a page gave', () => {
    expect(parseAuditLogCursor(auditLogCursor(cursor))).toEqual(cursor);
    for (const bad of ['', 'x', `${auditLogCursor(cursor)}0`, 'zzzzzzzzzzz_0123456789abcdef01234567', '1_0123'])
      expect(parseAuditLogCursor(bad), bad).toBeNull();
  });

  it('gives 50 entries by default, the cursor as where to start, the same by GET and POST', () => {
    expect(auditLogQuerySchema.parse({})).toEqual({ limit: 50 });
    const asked = { limit: '10', before: auditLogCursor(cursor), action: 'token.revoked' };
    const parsed = { limit: 10, before: cursor, action: 'token.revoked' };
    expect(auditLogQuerySchema.parse(asked)).toEqual(parsed);
    expect(auditLogBodySchema.parse({ ...asked, limit: 10 })).toEqual(parsed);
  });

  it('refuses an unknown parameter, a limit past 200 and an action it does not know, naming each', () => {
    const problems = (input: object) =>
      auditLogQuerySchema.safeParse(input).error?.issues.map((issue) => issue.message) ?? [];
    expect(problems({ limit: '201' })).toEqual(['limit must be a whole number from 1 to 200']);
    expect(problems({ before: 'yesterday' })).toEqual(['before must be the `next` of a page']);
    expect(problems({ action: 'project.exploded' })[0]).toMatch(
      /^action must be one of organisation.created, .*project.created/,
    );
    expect(problems({ since: 'x' })).toHaveLength(1);
  });
});

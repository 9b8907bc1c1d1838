import { describe, expect, it } from 'vitest';
import type { CommitStatus, ForgeClient, ForgeComment } from './forge-client.ts';
import { ForgeError } from './forge-errors.ts';
import { reportToForge } from './report-to-forge.ts';

/** A forge in memory: enough to see what the delivery sends, in what order. */
function memoryForge(fail: Partial<Record<'setStatus' | 'listComments' | 'createComment', ForgeError>> = {}) {
  const sent: string[] = [];
  const comments: ForgeComment[] = [{ id: 1, body: 'LGTM' }];
  const client: ForgeClient = {
    forge: 'github',
    async setStatus(commit: string, status: CommitStatus) {
      if (fail.setStatus) throw fail.setStatus;
      sent.push(`status ${status.context} ${status.state} ${commit}`);
    },
    async listComments() {
      if (fail.listComments) throw fail.listComments;
      return comments.map((c) => ({ ...c }));
    },
    async createComment(pr: number, body: string) {
      if (fail.createComment) throw fail.createComment;
      comments.push({ id: comments.length + 1, body });
      sent.push(`comment #${pr}`);
    },
    async updateComment(pr: number, id: number, body: string) {
      comments.find((c) => c.id === id)!.body = body;
      sent.push(`edit ${id} #${pr}`);
    },
    async pullRequestsOf() {
      return [3];
    },
  };
  return { client, sent, comments };
}

const delivery = (comment: string) => ({
  commit: 'abc1234',
  pullRequest: 5,
  statuses: [
    { context: 'perfwatch/mobile/london', state: 'success' as const, description: 'ok' },
    { context: 'perfwatch/desktop/london', state: 'failure' as const, description: 'lcp' },
  ],
  comment: `<!-- m -->\n${comment}`,
  marker: '<!-- m -->',
});

describe('delivering a report to a forge', () => {
  it('adds the comment once, then edits that same comment on every later run', async () => {
    const forge = memoryForge();
    await reportToForge(forge.client, delivery('first'));
    const outcomes = await reportToForge(forge.client, delivery('second'));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(forge.comments.filter((c) => c.body.includes('<!-- m -->'))).toEqual([
      { id: 2, body: '<!-- m -->\nsecond' },
    ]);
    expect(forge.sent.filter((s) => s.startsWith('comment') || s.startsWith('edit'))).toEqual([
      'comment #5',
      'edit 2 #5',
    ]);
  });

  it('without a pull request number, comments on the open pull requests of the commit', async () => {
    const forge = memoryForge();
    await reportToForge(forge.client, { ...delivery('x'), pullRequest: undefined });
    expect(forge.sent).toContain('comment #3');
  });

  it('a rate limit stops the rest and says until when; nothing throws', async () => {
    const retryAt = new Date('2026-11-26T11:00:00Z');
    const forge = memoryForge({
      setStatus: new ForgeError('rate-limited', 'status: 403 API rate limit exceeded', { status: 403, retryAt }),
    });
    const outcomes = await reportToForge(forge.client, delivery('x'));
    expect(outcomes.map((o) => [o.ok, o.kind])).toEqual([
      [false, 'rate-limited'],
      [false, 'rate-limited'],
      [false, 'rate-limited'],
    ]);
    expect(outcomes[0]!.detail).toBe(
      'status: 403 API rate limit exceeded, rate limited until 2026-11-26T11:00:00.000Z',
    );
    expect(outcomes[2]!.detail).toContain('not sent, rate limited until 2026-11-26T11:00:00.000Z');
  });

  it('a refused comment is reported and the statuses still go', async () => {
    const forge = memoryForge({
      createComment: new ForgeError('rejected', 'comment: 422 Validation Failed', { status: 422 }),
    });
    const outcomes = await reportToForge(forge.client, delivery('x'));
    expect(outcomes.filter((o) => o.ok).map((o) => o.what)).toEqual([
      'status perfwatch/mobile/london',
      'status perfwatch/desktop/london',
    ]);
    expect(outcomes.at(-1)).toMatchObject({ ok: false, kind: 'rejected' });
  });
});

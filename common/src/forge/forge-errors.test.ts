import { describe, expect, it } from 'vitest';
import { forgeErrorOf, retryAtOf } from './forge-errors.ts';

const now = new Date('2026-11-26T10:00:00Z');
const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers });

describe("a forge's refusals, sorted by what to do about them", () => {
  it("GitHub's primary rate limit: 403 with no requests left, retry at the reset", async () => {
    const error = await forgeErrorOf(
      answer(
        403,
        { message: 'API rate limit exceeded for installation.' },
        { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1795687200' },
      ),
      'status',
      now,
    );
    expect(error.kind).toBe('rate-limited');
    expect(error.retryAt?.getTime()).toBe(1795687200 * 1000);
  });

  it('secondary rate limits and 429 take Retry-After in seconds', async () => {
    const secondary = await forgeErrorOf(
      answer(403, { message: 'You have exceeded a secondary rate limit.' }, { 'retry-after': '60' }),
      'comment',
      now,
    );
    expect(secondary.kind).toBe('rate-limited');
    expect(secondary.retryAt?.toISOString()).toBe('2026-11-26T10:01:00.000Z');
    expect((await forgeErrorOf(answer(429, 'Retry later', { 'retry-after': '5' }), 'note', now)).kind).toBe(
      'rate-limited',
    );
  });

  it('403 otherwise is a permission, 401 a token, 404 not found, 422 rejected, 5xx unavailable', async () => {
    const kinds = await Promise.all(
      [403, 401, 404, 422, 400, 502].map(
        async (status) => (await forgeErrorOf(answer(status, { message: 'no' }), 'x', now)).kind,
      ),
    );
    expect(kinds).toEqual(['forbidden', 'unauthorized', 'not-found', 'rejected', 'rejected', 'unavailable']);
  });

  it("the forge's own words are kept, bounded", async () => {
    const error = await forgeErrorOf(
      answer(422, { message: 'Validation Failed', errors: [{ code: 'custom' }] }),
      'status',
      now,
    );
    expect(error.message).toBe('status: 422 Validation Failed: [{"code":"custom"}]');
    const long = await forgeErrorOf(answer(500, 'x'.repeat(100_000)), 'status', now);
    expect(long.message.length).toBeLessThan(600);
  });

  it('no rate-limit header: no retry time', () => {
    expect(retryAtOf(new Headers(), now)).toBeUndefined();
    expect(retryAtOf(new Headers({ 'ratelimit-reset': '30' }), now)?.toISOString()).toBe('2026-11-26T10:00:30.000Z');
  });
});

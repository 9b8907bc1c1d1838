import { describe, expect, it } from 'vitest';
import { MAX_PULL_REQUEST } from '../revision.ts';
import { parseCommit, parsePullRequest } from './revision-fields.ts';
import { updateBodySchema, updateQuerySchema } from './update-requests.ts';
import { overviewBodySchema, overviewQuerySchema } from './snapshot-requests.ts';

const URL_ = 'https://shop.example/';

describe('parseCommit', () => {
  it('takes 7 to 64 hex digits of either case, lower-cased', () => {
    expect(parseCommit('ABCDEF0')).toBe('abcdef0');
    expect(parseCommit('a'.repeat(40))).toBe('a'.repeat(40));
    expect(parseCommit('F'.repeat(64))).toBe('f'.repeat(64));
  });
  it.each(['abcdef', 'a'.repeat(65), 'abcdefg', ' abcdef0', 'abcdef0\n', ''])('refuses %j', (text) => {
    expect(parseCommit(text)).toBeNull();
  });
});

describe('parsePullRequest', () => {
  it('takes a positive decimal up to the forges’ 32-bit limit', () => {
    expect(parsePullRequest('1')).toBe(1);
    expect(parsePullRequest(String(MAX_PULL_REQUEST))).toBe(MAX_PULL_REQUEST);
  });
  it.each(['0', '-1', '+1', '01', '1.0', '1e3', ' 1', '0x10', String(MAX_PULL_REQUEST + 1), ''])(
    'refuses %j',
    (text) => {
      expect(parsePullRequest(text)).toBeNull();
    },
  );
});

describe('/v1/update parameters', () => {
  it('GET coerces the pull request from text; POST takes a number; both keep the commit lower-case', () => {
    expect(updateQuerySchema.parse({ url: URL_, commit: 'ABC1234', branch: 'feat/x', pullRequest: '5' })).toMatchObject(
      {
        commit: 'abc1234',
        branch: 'feat/x',
        pullRequest: 5,
      },
    );
    expect(updateBodySchema.parse({ url: URL_, commit: 'ABC1234', pullRequest: 5 })).toMatchObject({
      commit: 'abc1234',
      pullRequest: 5,
    });
  });
  it('leaves them out when not given', () => {
    const parsed = updateQuerySchema.parse({ url: URL_ });
    for (const name of ['commit', 'branch', 'pullRequest']) expect(parsed).not.toHaveProperty(name);
  });
  it('refuses a number as text in a body, and a branch git would refuse', () => {
    expect(updateBodySchema.safeParse({ url: URL_, pullRequest: '5' }).error?.issues[0]?.message).toMatch(
      /^pullRequest must be a whole number/,
    );
    for (const branch of ['a..b', 'a b', 'a~1', 'x/', '/x', 'x.lock', 'a@{1}', 'a//b', '-x'])
      expect(updateQuerySchema.safeParse({ url: URL_, branch }).error?.issues[0]?.message, branch).toMatch(
        /^branch must be a git branch name/,
      );
  });
});

describe('/v1/overview filters', () => {
  it('GET and POST give the same filters', () => {
    const query = overviewQuerySchema.parse({
      startDate: '2026-01-01',
      endDate: '2026-01-02',
      commit: 'ABC1234',
      branch: 'main',
      pullRequest: '9',
    });
    const body = overviewBodySchema.parse({
      dateRange: { startDate: '2026-01-01', endDate: '2026-01-02' },
      commit: 'abc1234',
      branch: 'main',
      pullRequest: 9,
    });
    expect(query).toEqual(body);
    expect(query).toMatchObject({ commit: 'abc1234', branch: 'main', pullRequest: 9 });
  });
});

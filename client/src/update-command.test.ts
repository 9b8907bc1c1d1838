import { describe, expect, it } from 'vitest';
import type { AuditResult, Revision } from '@perfwatch/common';
import { perfwatch } from './cli-test-gateway.ts';
import { resultHeading } from './revision-flags.ts';

const SHOP = 'https://shop.example/';
const DATE = '2026-11-26T10:00:00';

const answered = (revision?: Revision): AuditResult => ({
  mobile: {
    london: {
      lighthouse: { crux: { url: null }, date: DATE, elementCount: 10 },
      median: 1,
      locations: ['london'],
      defaultLocation: 'london',
      runs: [],
      ...(revision ? { revision } : {}),
    },
  },
});

describe('perfwatch update --commit --branch --pull-request', () => {
  it('sends them flat, as the API takes them, and prints them in the heading', async () => {
    const revision = { commit: 'abcdef0', branch: 'feature/x', pullRequest: 12 };
    const run = await perfwatch(
      answered(revision),
      'update',
      SHOP,
      '--device',
      'mobile',
      '--commit',
      'ABCDEF0',
      '--branch',
      'feature/x',
      '--pull-request',
      '12',
    );
    expect(run).toMatchObject({ code: 0, err: '' });
    expect(run.bodies).toEqual([{ url: SHOP, device: 'mobile', updateType: 'manual', mode: 'sync', ...revision }]);
    expect(run.out.split('\n')[0]).toBe(`${SHOP} at ${DATE} (branch feature/x, commit abcdef0, pull request #12)`);
  });

  it('sends them with an async update too', async () => {
    const run = await perfwatch({ ok: 1, id: 'u1' }, 'update', SHOP, '--async', '--pull-request', '7');
    expect(run.bodies).toEqual([{ url: SHOP, updateType: 'manual', mode: 'async', pullRequest: 7 }]);
  });

  it('without them: the request and the heading as before', async () => {
    const run = await perfwatch(answered(), 'update', SHOP);
    expect(run.bodies).toEqual([{ url: SHOP, updateType: 'manual', mode: 'sync' }]);
    expect(run.out.split('\n')[0]).toBe(`${SHOP} at ${DATE}`);
  });

  it.each([
    ['--commit', 'xyz', /--commit must be a git commit hash/],
    ['--branch', 'a..b', /--branch must be a git branch name/],
    ['--pull-request', '0', /--pull-request must be a pull or merge request number/],
    ['--pull-request', 'twelve', /--pull-request must be a pull or merge request number/],
  ])('%s %s is a usage error, and nothing is sent', async (flag, value, message) => {
    const run = await perfwatch(answered(), 'update', SHOP, flag, value);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(message);
    expect(run.bodies).toEqual([]);
  });
});

describe('resultHeading', () => {
  it('reads the revision of any cell, and says nothing of one without', () => {
    expect(
      resultHeading(SHOP, DATE, {
        ...answered({ pullRequest: 3 }),
        missing: [{ device: 'desktop', location: 'tokyo', reason: 'TIMEOUT' }],
      }),
    ).toBe(`${SHOP} at ${DATE} (pull request #3)`);
    expect(resultHeading(SHOP, DATE, {})).toBe(`${SHOP} at ${DATE}`);
  });
});

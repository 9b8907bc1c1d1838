import { describe, expect, it } from 'vitest';
import type { CompareResult } from '@perfwatch/common';
import { perfwatch } from './cli-test-gateway.ts';

const SHOP = 'https://shop.example/';
const PREVIEW = 'https://pr-12.preview.shop.example/';

const compared = (over: Partial<CompareResult> = {}): CompareResult => ({
  url: PREVIEW,
  from: '2026-11-26T10:00:00',
  to: '2026-11-26T11:00:00',
  cells: [],
  unmatched: [],
  ...over,
});

describe('perfwatch compare', () => {
  it('compares two URLs by --base-url, --from and --to, and says which project and change each side is', async () => {
    const answer = compared({
      baseUrl: SHOP,
      fromRevision: { branch: 'main' },
      toRevision: { pullRequest: 12, commit: 'abcdef0' },
    });
    const run = await perfwatch(
      answer,
      'compare',
      PREVIEW,
      '--base-url',
      SHOP,
      '--from',
      'latest',
      '--to',
      'latest',
      '--device',
      'mobile',
    );
    expect(run).toMatchObject({ code: 0, err: '' });
    expect(run.bodies).toEqual([{ url: PREVIEW, baseUrl: SHOP, from: 'latest', to: 'latest', device: 'mobile' }]);
    expect(run.out.split('\n').slice(0, 3)).toEqual([
      `base: ${SHOP} at 2026-11-26T10:00:00 (branch main)`,
      `head: ${PREVIEW} at 2026-11-26T11:00:00 (commit abcdef0, pull request #12)`,
      `${PREVIEW}: 2026-11-26T10:00:00 → 2026-11-26T11:00:00`,
    ]);
    const json = await perfwatch(
      answer,
      'compare',
      PREVIEW,
      '--from',
      '2026-11-26T10:00:00',
      '--to',
      'latest',
      '--json',
    );
    expect(JSON.parse(json.out)).toEqual(answer);
  });

  it('still takes the two dates as words, and prints one project as before', async () => {
    const run = await perfwatch(compared({ url: SHOP }), 'compare', SHOP, '2026-11-26T10:00:00', '2026-11-26T11:00:00');
    expect(run.bodies).toEqual([{ url: SHOP, from: '2026-11-26T10:00:00', to: '2026-11-26T11:00:00' }]);
    expect(run.out).toBe(`${SHOP}: 2026-11-26T10:00:00 → 2026-11-26T11:00:00\n`);
  });

  it('refuses missing or doubled dates as usage errors (exit 2), asking nothing', async () => {
    for (const argv of [
      ['compare', SHOP],
      ['compare', SHOP, '--from', 'latest'],
      ['compare', SHOP, 'a', 'b', '--to', 'latest'],
      ['compare', SHOP, 'a'],
    ]) {
      const run = await perfwatch(compared(), ...argv);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.bodies).toEqual([]);
      expect(run.err).toMatch(/^perfwatch compare: compare (needs --from and --to|takes)/);
    }
  });
});

describe('perfwatch overview', () => {
  it("filters by one code change with update's flags, checked the same way", async () => {
    const run = await perfwatch(
      [],
      'overview',
      '--from',
      '2026-11-01',
      '--to',
      '2026-11-30',
      '--commit',
      'ABCDEF0',
      '--pull-request',
      '12',
    );
    expect(run).toMatchObject({ code: 0, err: '' });
    expect(run.bodies).toEqual([
      { dateRange: { startDate: '2026-11-01', endDate: '2026-11-30' }, commit: 'abcdef0', pullRequest: 12 },
    ]);
    const bad = await perfwatch([], 'overview', '--from', '2026-11-01', '--to', '2026-11-30', '--branch', 'a..b');
    expect(bad.code).toBe(2);
    expect(bad.bodies).toEqual([]);
  });
});

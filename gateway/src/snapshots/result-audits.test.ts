import { describe, expect, it } from 'vitest';
import type { LighthouseResult } from '@perfwatch/common';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { auditsOfJson, auditsOfResult, MAX_COMPARED_AUDITS, MAX_COMPARED_TEXT_CHARS } from './result-audits.ts';

const bytes = (text: string) => Buffer.from(text);
/** A result of the given audits, and nothing else a comparison reads. */
const resultOf = (audits: Record<string, unknown>) =>
  ({ lighthouseVersion: '13', fetchTime: '', finalDisplayedUrl: '', categories: {}, audits }) as LighthouseResult;

describe('auditsOfJson', () => {
  it("reads every real result's audits as the parsed result has them, however the JSON is spaced", () => {
    for (const device of ['mobile', 'desktop'] as const)
      for (const n of [1, 2, 3] as const) {
        const lhr = loadLhr(device, n);
        const expected = auditsOfResult(lhr);
        expect(expected.size).toBe(Object.keys(lhr.audits).length);
        expect(auditsOfJson(bytes(JSON.stringify(lhr)))).toEqual(expected);
        expect(auditsOfJson(bytes(JSON.stringify(lhr, null, 2)))).toEqual(expected);
      }
  });

  it('reads names and strings as JSON.parse does: escapes, names given twice, audits only at the top', () => {
    const text = `{
      "details": {"audits": {"nested": {"score": 0}}},
      "audits": {"gone": {"score": 0}},
      "audits": {
        "a\\u0062c": {"ti\\u0074le": "Caf\\u00e9 \\"quoted\\" \\ud83d\\ude00", "score": 0.5, "score": 0.25},
        "savings": {"score": 0, "metricSavings": {"LCP": 1200, "FCP": 900, "details": {"LCP": 5}}},
        "replaced": {"score": 1, "metricSavings": {"LCP": 1}, "metricSavings": {"FCP": 300}},
        "odd": {"score": "0", "title": 7, "metricSavings": {"LCP": "9"}},
        "not-an-audit": [1, 2],
        "empty": {}
      },
      "i18n": {"title": "x", "audits": 3}
    }`;
    const expected = auditsOfResult(JSON.parse(text) as LighthouseResult);
    expect(auditsOfJson(bytes(text))).toEqual(expected);
    expect([...expected.keys()]).toEqual(['abc', 'savings', 'replaced', 'odd', 'empty']);
    expect(expected.get('abc')).toEqual({ title: 'Café "quoted" 😀', score: 0.25, savingMs: 0 });
    expect(expected.get('savings')).toEqual({ title: 'savings', score: 0, savingMs: 1200 });
    expect(expected.get('replaced')).toEqual({ title: 'replaced', score: 1, savingMs: 0 });
  });

  it('cuts ids and titles at what a comparison shows, and reads at most MAX_COMPARED_AUDITS audits', () => {
    const long = 'é'.repeat(1_000_000);
    const audits: Record<string, unknown> = { [`id-${long}`]: { title: long, score: 0 } };
    for (let i = 0; i < MAX_COMPARED_AUDITS + 10; i++) audits[`audit-${i}`] = { score: i % 2 };
    const read = auditsOfJson(bytes(JSON.stringify(resultOf(audits))));
    expect(read).toEqual(auditsOfResult(resultOf(audits)));
    expect(read.size).toBe(MAX_COMPARED_AUDITS);
    const [id, first] = [...read][0]!;
    expect(id).toBe(`id-${long}`.slice(0, MAX_COMPARED_TEXT_CHARS) + '…');
    expect(first.title).toBe(long.slice(0, MAX_COMPARED_TEXT_CHARS) + '…');
  });
});
